"""A claim whose pick skipped a claimable task only because another transaction held its row
(``SKIP LOCKED``) waits for that row and takes the task, instead of answering "nothing to claim"
and leaving the member idle beside work routed to it. On MariaDB any claimer whose scan merely
examines a row (one routed to someone else, say) holds its lock for that moment; here another
connection holds it on purpose. A claim with nothing claimable does not wait on rows it could
not take. The multi-process drains in ``test_claim_exactly_once`` cover the race itself.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from agentscope_teams.store.sql import SqlStore
from agentscope_teams.teams import LocalTeamClient, Member, TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.rules.models import Task

from .round_trips import count_round_trips
from .test_claim_plan import CTX, sql_store

__all__ = ["sql_store"]  # the fixture, shared with test_claim_plan

pytestmark = pytest.mark.anyio
#: Bound on a claim that must not hang (a guard against a deadlock, not a timing check).
HANG = 60.0


async def _team(store: SqlStore) -> tuple[LocalTeamClient, str, TaskBoard]:
    client = LocalTeamClient(store, CTX)
    team = await client.create_team("waits", members=[Member(name="me"), Member(name="other")])
    return client, team.id, TaskBoard(store, TeamKeys(CTX.owner_scope(), team.id), native=True)


async def _board(store: SqlStore) -> TaskBoard:
    return (await _team(store))[2]


class _Holder:
    """Another transaction holding one task row's lock until :meth:`release`."""

    def __init__(self, board: TaskBoard, task: Task) -> None:
        self.board, self.task = board, task
        self.held, self.go = asyncio.Event(), asyncio.Event()
        self.runner: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Holder:
        table = self.board.queue.t.task.name  # type: ignore[attr-defined]
        lock = text(f"SELECT task_id FROM {table} WHERE team = :team AND task_id = :id FOR UPDATE")
        team = self.board.queue.team  # type: ignore[attr-defined]

        async def hold(conn: AsyncConnection) -> None:
            await conn.execute(lock, {"team": team, "id": self.task.id})
            self.held.set()
            await self.go.wait()
            await conn.rollback()

        store = self.board.store
        assert isinstance(store, SqlStore)
        self.runner = asyncio.create_task(store.transaction("hold", hold, write=True))
        await asyncio.wait_for(self.held.wait(), HANG)
        return self

    def release(self) -> None:
        self.go.set()

    async def __aexit__(self, *exc: object) -> None:
        self.release()
        assert self.runner is not None
        await self.runner


async def test_a_claim_waits_for_its_routed_task_held_by_another_transaction(
    sql_store: SqlStore,
) -> None:
    """The one task routed to ``me`` is locked by another transaction: ``me``'s claim does not
    come back empty (it did: the pick skipped the row); it waits, and takes the task once the
    holder lets go."""
    board = await _board(sql_store)
    task = await board.create("lead", "for me", assignee="me")
    async with _Holder(board, task) as holder:
        claim = asyncio.create_task(board.claim_next("me", 60))
        done, _ = await asyncio.wait({claim}, timeout=0.5)  # gives an empty answer time to come
        assert not done, f"the claim answered while the row was held: {claim.result()!r}"
        holder.release()
        claimed = await asyncio.wait_for(claim, HANG)
    assert claimed is not None and claimed.id == task.id and claimed.owner == "me"


@pytest.mark.parametrize("prefer_own", [False, True])
async def test_a_members_claim_through_the_team_client_waits_too(
    sql_store: SqlStore, prefer_own: bool
) -> None:
    """The same through the team client, whose claim carries the team record's version on
    PostgreSQL (a guarded pick): it waits for the row, then picks it."""
    client, team_id, board = await _team(sql_store)
    task = await client.assign_task(team_id, "for me", assignee="me")
    async with _Holder(board, task) as holder:
        claim = asyncio.create_task(client.claim_task(team_id, "me", prefer_own=prefer_own))
        done, _ = await asyncio.wait({claim}, timeout=0.5)
        assert not done, f"the claim answered while the row was held: {claim.result()!r}"
        holder.release()
        claimed = await asyncio.wait_for(claim, HANG)
    assert claimed is not None and claimed.id == task.id and claimed.owner == "me"


async def test_an_empty_claim_does_not_wait_on_rows_it_could_not_take(
    sql_store: SqlStore,
) -> None:
    """Held rows of tasks routed to someone else are not waited for: ``me``'s claim answers
    "nothing" while the holder still holds them."""
    board = await _board(sql_store)
    theirs = await board.create("lead", "for other", assignee="other")
    async with _Holder(board, theirs):
        assert await asyncio.wait_for(board.claim_next("me", 60), HANG) is None
    claimed = await board.claim_next("other", 60)
    assert claimed is not None and claimed.id == theirs.id


async def test_an_empty_claim_is_the_pick_and_one_look(sql_store: SqlStore) -> None:
    """Nothing to claim and no lease to settle: the pick, then one unlocked look (the candidate
    and whether expired leases wait), each a single round trip; no settling transaction."""
    board = await _board(sql_store)
    await board.create("lead", "for other", assignee="other")
    async with count_round_trips(sql_store) as trips:
        assert await board.claim_next("me", 60) is None
    if sql_store.dialect == "postgresql":  # statements on the asyncpg connection, autocommit
        assert trips.seen == ["WITH", "SELECT"], trips.statements
    else:  # the pick's transaction rolled back; the look sent with its COMMIT
        assert trips.seen == ["SELECT", "ROLLBACK", "SELECT"], trips.statements
    assert trips.on_driver == set(range(len(trips.seen)))


async def test_an_empty_claim_settles_an_expired_lease_it_may_not_take(
    sql_store: SqlStore,
) -> None:
    """A lease of a task routed to ``other`` ran out: ``me``'s empty claim sees it in its look and
    settles it (back to pending, for ``other``), as before the look."""
    board = await _board(sql_store)
    task = await board.create("lead", "for other", assignee="other")
    assert await board.claim_next("other", 0.05) is not None
    await asyncio.sleep(0.2)
    assert await board.claim_next("me", 60) is None
    settled = await board.get(task.id)
    assert settled.status.value == "pending" and settled.owner is None
