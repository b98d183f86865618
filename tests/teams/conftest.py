from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import utcnow
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.teams import LocalTeamClient

from ..backends import POSTGRES_URL, REDIS_URL, StoreSpec, unique_namespace
from ..conftest import require_service


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


@pytest.fixture(params=["memory", "redis", "postgres"])
async def two_stores(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[BaseStore, BaseStore]]:
    """(a member side's store, a lead's store): the same store on memory, two connections on Redis
    (in a namespace of its own) and PostgreSQL."""
    if request.param == "memory":
        store = InMemoryStore()
        yield store, store
        return
    require_service(request.param)
    # The teams channel is store-wide: on Redis a namespace of its own keeps other tests' teams out.
    url = REDIS_URL if request.param == "redis" else POSTGRES_URL
    opts = {"namespace": unique_namespace()} if request.param == "redis" else {}
    async with store_from_url(url, **opts) as mine, store_from_url(url, **opts) as theirs:
        yield mine, theirs
