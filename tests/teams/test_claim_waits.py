"""A claim whose pick skipped a claimable task only because another transaction held its row
(``SKIP LOCKED``) waits for that row and takes the task, instead of answering "nothing to claim"
and leaving the member idle beside work routed to it. On MariaDB any claimer whose scan merely
examines a row (one routed to someone else, say) holds its lock for that moment; here another
connection holds it on purpose. A claim with nothing claimable does not wait on rows it could
not take. The multi-process drains in ``test_claim_exactly_once`` cover the race itself.
"""

from __future__ import annotations

import asyncio

import anyio
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


async def _lock_waits(store: SqlStore) -> int:
    """Transactions of this database waiting for a row lock now."""
    if store.dialect == "postgresql":
        sql = (
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
    else:
        sql = (
            "SELECT count(*) FROM information_schema.innodb_trx x "
            "JOIN information_schema.processlist p ON p.id = x.trx_mysql_thread_id "
            "WHERE x.trx_state = 'LOCK WAIT' AND p.db = DATABASE()"
        )

    async def run(conn: AsyncConnection) -> int:
        return int(await conn.scalar(text(sql)) or 0)

    return await store.transaction("lock waits", run, single=True)


async def _until_waiting(store: SqlStore, count: int) -> None:
    """Return once ``count`` transactions wait for a row lock (bounded by :data:`HANG`). Polled
    every 0.25 s: InnoDB refreshes ``innodb_trx`` only when unread for 0.1 s."""
    with anyio.fail_after(HANG):
        while await _lock_waits(store) < count:  # noqa: ASYNC110 - the server's state, polled
            await asyncio.sleep(0.25)


async def test_two_claims_of_one_member_never_both_take_the_task_they_waited_for(
    sql_store: SqlStore,
) -> None:
    """Two claims of ``me`` skip the one task (another transaction holds its row) and both wait
    for it: the first takes it, the second finds it held by ``me`` and answers "nothing". (It
    renewed the lease and returned the same task: one task, two claims.)"""
    board = await _board(sql_store)
    task = await board.create("lead", "one task")
    async with _Holder(board, task) as holder:
        claims = [asyncio.create_task(board.claim_next("me", 60)) for _ in range(2)]
        await _until_waiting(sql_store, 2)
        holder.release()
        got = await asyncio.wait_for(asyncio.gather(*claims), HANG)
    assert sorted(str(t and t.id) for t in got) == sorted([task.id, "None"]), got
    history = [e.action for e in (await board.get(task.id)).history]
    assert history == ["created", "claimed"]


async def test_a_waited_for_expired_lease_of_the_member_is_reclaimed_not_renewed(
    sql_store: SqlStore,
) -> None:
    """``me``'s own lease ran out and another transaction holds the row: the claim that waits for
    it reclaims it as its pick would (a new attempt, ``lease_expired`` then ``claimed``), not
    renew it as a named claim of ``me`` does."""
    board = await _board(sql_store)
    task = await board.create("lead", "one task")
    assert await board.claim_next("me", 0.05) is not None
    await asyncio.sleep(0.2)  # the lease runs out
    async with _Holder(board, task) as holder:
        claim = asyncio.create_task(board.claim_next("me", 60))
        await _until_waiting(sql_store, 1)
        holder.release()
        claimed = await asyncio.wait_for(claim, HANG)
    assert claimed is not None and claimed.id == task.id and claimed.attempts == 2
    actions = [e.action for e in claimed.history]
    assert actions == ["created", "claimed", "lease_expired", "claimed"]
