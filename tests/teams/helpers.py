"""Shared helpers of the team runtime tests."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.state import AgentState
from agentscope_teams.store import BaseStore, Entry, Key
from agentscope_teams.store.base import get_many
from agentscope_teams.teams import (
    LocalTeamClient,
    MemberBuilder,
    MemberStatus,
    TeamRef,
    TeamRuntime,
)
from agentscope_teams.teams.lead.state import TeamLeadState
from agentscope_teams.teams.member.builder import load_pool


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await anyio.sleep(0.05)


def team_id_of(state: AgentState) -> str:
    team_id = TeamLeadState.peek(state).team_id
    assert isinstance(team_id, str), state.middle_context
    return team_id


async def lead_messages(client: LocalTeamClient, team_id: str) -> list[tuple[str, str]]:
    """(sender, content) of every message in the lead's inbox."""
    return [(m.sender, m.content) for m in await client.read_messages(team_id, "lead")]


async def members_idle(client: LocalTeamClient, team_id: str) -> None:
    """Wait until no member is in a call (each was called at least once)."""

    async def idle() -> bool:
        team = await client.get_team(team_id)
        return all(m.status is MemberStatus.IDLE for m in team.members)

    await eventually(idle, within=30)


class CountingStore:
    """Wraps a store and records every key it reads (``gets``, by ``get`` or ``get_many``) and every
    key it lists (``listed``), and counts the calls of each operation (``calls``, one per store round
    trip of a batched read), so a test can count what an operation touches without timing it."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.gets: list[Key] = []
        self.listed: list[Key] = []
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def get(self, key: Key) -> Entry | None:
        self.gets.append(key)
        self.calls["get"] += 1
        return await self.inner.get(key)

    async def get_many(self, keys: Sequence[Key]) -> list[Entry | None]:
        self.gets.extend(keys)
        self.calls["get_many"] += 1
        return await get_many(self.inner, keys)

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        page = await self.inner.list_keys(prefix, limit=limit, after=after)
        self.listed.extend(page)
        self.calls["list_keys"] += 1
        return page

    async def put(self, key: Key, value: bytes, **options: Any) -> int:
        self.calls["put"] += 1
        return await self.inner.put(key, value, **options)

    async def delete(self, key: Key, **options: Any) -> bool:
        self.calls["delete"] += 1
        return await self.inner.delete(key, **options)

    @property
    def total(self) -> int:
        """Every counted store call since the last :meth:`reset`."""
        return sum(self.calls.values())

    def reset(self) -> None:
        self.gets.clear()
        self.listed.clear()
        self.calls.clear()

    def under(self, prefix: Key) -> int:
        """How many keys under ``prefix`` were read or listed since the last :meth:`reset`."""
        return sum(1 for k in [*self.gets, *self.listed] if k[: len(prefix)] == prefix)


SPEC_DIR = Path(__file__).resolve().parents[2] / "specs"


def member_runtime(
    store: BaseStore,
    tmp_path: Path,
    ctx: RuntimeContext,
    team_id: str,
    model: ScriptedModel,
    poll: float = 30.0,
) -> TeamRuntime:
    """A runtime serving ``team_id`` (watched), its members built from the repository's specs with
    ``model``."""
    runtime = TeamRuntime(store, lease_ttl=5.0, poll=poll)
    builder = MemberBuilder(
        store=store,
        specs=load_pool(SPEC_DIR),
        client_factory=LocalTeamClient,
        workspace=tmp_path,
        root=tmp_path,
        model=model,
    )
    runtime.watch(TeamRef(ctx, team_id, builder))
    return runtime
