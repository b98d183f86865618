from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import utcnow
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient

from ..backends import StoreSpec


class FakeClock:
    """A wall clock the test moves by hand, so lease expiry needs no sleeping."""

    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def alice(ns: str) -> RuntimeContext:
    return RuntimeContext(session_id="s-alice", user_id="alice", org_id=ns, metadata={})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def client(store: BaseStore, alice: RuntimeContext, clock: FakeClock) -> LocalTeamClient:
    return LocalTeamClient(store, alice, task_lease=30.0, clock=clock)


@pytest.fixture
def shared_spec(store_spec: StoreSpec) -> StoreSpec:
    """Backends several processes can share; the in-memory store is skipped."""
    if store_spec.backend == "memory":
        pytest.skip("the in-memory store is not shared across processes")
    return store_spec
