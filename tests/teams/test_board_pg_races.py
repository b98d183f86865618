"""PostgreSQL's one-statement finish racing other transactions on real connections.

Each test holds one transaction at a chosen point (its connection wrapped so that it waits for
the test), lets a finish statement start and queue on a lock behind it (seen in
``pg_stat_activity``), then lets the transaction commit: the interleaving is forced, not hoped for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import pytest
from sqlalchemy import text

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import store_from_url
from agentscope_teams.store.sql import SqlStore
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues.sql import SqlBoardQueue

from ..backends import POSTGRES_URL
from ..conftest import require_service
from .conftest import FakeClock

pytestmark = pytest.mark.anyio

#: How a finish statement starts (:mod:`agentscope_teams.teams.queues.sql_pg`).
_FINISH_START = "%WITH cur AS MATERIALIZED%"


@pytest.fixture
async def stores() -> AsyncIterator[tuple[SqlStore, SqlStore]]:
    """Two stores on one PostgreSQL database: two processes' connections."""
    require_service("postgres")
    async with store_from_url(POSTGRES_URL) as one, store_from_url(POSTGRES_URL) as two:
        assert isinstance(one, SqlStore) and isinstance(two, SqlStore)
        yield one, two


class _Held:
    """A connection whose ``execute`` stops after its ``after``-th call until ``go`` is set
    (``there`` is set when it stops)."""

    def __init__(self, conn: Any, after: int, there: anyio.Event, go: anyio.Event) -> None:
        self._conn, self._after, self._there, self._go = conn, after, there, go
        self._calls = 0

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        out = await self._conn.execute(*args, **kwargs)
        self._calls += 1
        if self._calls == self._after:
            self._there.set()
            await self._go.wait()
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def hold(
    monkeypatch: pytest.MonkeyPatch, board: TaskBoard, op: str, after: int
) -> tuple[anyio.Event, anyio.Event]:
    """Hold ``board``'s next ``op`` transaction after its ``after``-th statement: (there, go)."""
    queue = board.queue
    assert isinstance(queue, SqlBoardQueue)
    there, go = anyio.Event(), anyio.Event()
    inner = queue._tx

    async def held(name: str, fn: Callable[[Any], Awaitable[Any]]) -> Any:
        if name != op:
            return await inner(name, fn)
        return await inner(name, lambda conn: fn(_Held(conn, after, there, go)))

    monkeypatch.setattr(queue, "_tx", held)
    return there, go


async def finish_waits_for_a_lock(store: SqlStore) -> None:
    """Return once a finish statement waits for a row lock in this database."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND query LIKE :start"
    )

    async def waiting(conn: Any) -> bool:
        return bool((await conn.execute(query, {"start": _FINISH_START})).scalar())

    with anyio.fail_after(30):  # a guard against a hang, not a latency bound
        while True:
            if await store.transaction("test look", waiting, single=True):
                return
            await anyio.sleep(0.01)


async def test_a_completion_queued_behind_a_new_dependents_lock_frees_that_dependent(
    stores: tuple[SqlStore, SqlStore],
    alice: RuntimeContext,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Process two creates a task blocked by ``first`` (its enqueue locks ``first``'s row, reads
    it in progress and counts it as left); process one's completion of ``first`` starts then and
    waits for that lock. Once the enqueue commits, the completion must count the new dependent:
    it becomes claimable, as the rules say once its only blocker completed."""
    one, two = stores
    client = LocalTeamClient(one, alice, task_lease=30.0, clock=clock)
    team = await client.create_team("crew", members=[Member(name="a"), Member(name="b")])
    keys = TeamKeys(alice.owner_scope(), team.id)
    board_one = TaskBoard(one, keys, clock, native=True)
    board_two = TaskBoard(two, keys, clock, native=True)
    first = await board_one.create("lead", "first")
    assert (await board_one.claim_next("a", 30)) is not None
    there, go = hold(monkeypatch, board_two, "enqueue", after=1)  # the blockers' locked read
    made: list[Any] = []

    async def create() -> None:
        made.append(await board_two.create("lead", "after", blocked_by=[first.id]))

    async with anyio.create_task_group() as tg:
        tg.start_soon(create)
        await there.wait()
        tg.start_soon(board_one.complete, "a", first.id, "done")
        await finish_waits_for_a_lock(one)
        go.set()
    assert (await board_one.get(first.id)).status is TaskStatus.COMPLETED
    claimed = await board_one.claim_next("b", 30)
    assert claimed is not None and claimed.id == made[0].id
