"""The MariaDB queue's claim and transitions on the asyncmy connection
(:mod:`agentscope_teams.teams.queues.sql_mysql`): statements counted and read, the commit in the
write's packet, no rollback by the pool after it, and driver errors sorted for the retry loop."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest
from asyncmy import errors as mysql_errors
from sqlalchemy import event

from agentscope_teams.errors import NotTaskOwnerError, StoreError, TaskStateError
from agentscope_teams.store import StoreBackend
from agentscope_teams.store.sql import mysql_rows, rendered
from agentscope_teams.store.sql.driver import Failure, classify, pyformat
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues.sql_mysql import MysqlBoardQueue

from ..backends import StoreSpec
from .board_paths import native_spec
from .round_trips import count_round_trips

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["mariadb"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Any) -> StoreSpec:
    return native_spec(request, tmp_path)


@pytest.fixture
async def store(store_spec: StoreSpec) -> AsyncIterator[StoreBackend]:
    async with store_spec.open() as s:
        yield s


@pytest.fixture
async def board(client: LocalTeamClient) -> TaskBoard:
    team = await client.create_team("crew", members=[Member(name="a"), Member(name="b")])
    board = TaskBoard(client.store, TeamKeys(client.ctx.owner_scope(), team.id), client.clock)
    assert isinstance(board.queue, MysqlBoardQueue)
    return board


@contextmanager
def statements(store: StoreBackend) -> Iterator[list[str]]:
    """The full text of every statement sent on the driver connection inside the block."""
    sent: list[str] = []
    watchers = store._db.watchers  # type: ignore[attr-defined]
    watchers.append(sent.append)
    try:
        yield sent
    finally:
        watchers.remove(sent.append)


@contextmanager
def pool_resets(store: StoreBackend) -> Iterator[list[bool]]:
    """Whether each connection given back to the pool inside the block had its transaction
    ended already (False: the pool sent a ROLLBACK)."""
    pool = store._engine.sync_engine.pool  # type: ignore[attr-defined]
    seen: list[bool] = []

    def on_reset(dbapi_connection: Any, record: Any, state: Any) -> None:
        seen.append(state.transaction_was_reset)

    event.listen(pool, "reset", on_reset)
    try:
        yield seen
    finally:
        event.remove(pool, "reset", on_reset)


async def test_a_claim_is_the_locked_pick_then_the_write_and_commit_in_one_packet(
    store: StoreBackend, board: TaskBoard
) -> None:
    await board.create("lead", "first")
    with statements(store) as sent, pool_resets(store) as resets:
        async with count_round_trips(store) as counter:
            claimed = await board.claim_next("a", 30)
    assert claimed is not None and claimed.owner == "a" and claimed.version == 2
    assert counter.seen == ["SELECT", "UPDATE"]
    assert "FOR UPDATE SKIP LOCKED" in sent[0]
    assert sent[1].startswith("UPDATE") and sent[1].endswith(";COMMIT")
    assert sent[1].count("UPDATE ") == 2  # the record, the row
    # kept for the next call (store.sql.spare): no check-in, so no ROLLBACK from the pool
    assert resets == [] and len(store._db.spare) == 1  # type: ignore[attr-defined]
    stored = await board.get(claimed.id)
    assert stored.version == 2 and stored.status is TaskStatus.IN_PROGRESS


async def test_a_completion_moves_its_dependents_in_the_packet_that_commits(
    store: StoreBackend, board: TaskBoard
) -> None:
    """A finish on a queue that did not write the task's record last (another process's, here a
    second board) reads the row, then writes; the dependents' counters only when one waits."""
    first = await board.create("lead", "first")
    second = await board.create("lead", "second", blocked_by=[first.id])
    claimed = await board.claim_next("a", 30)
    assert claimed is not None and claimed.id == first.id
    assert await board.claim_next("b", 30) is None  # the second waits on the first
    other = TaskBoard(store, board.keys, board.clock)
    with statements(store) as sent, pool_resets(store) as resets:
        async with count_round_trips(store) as counter:
            done = await other.complete("a", first.id, "done")
    assert done.status is TaskStatus.COMPLETED
    assert counter.seen == ["SELECT", "UPDATE"]
    assert sent[1].endswith(";COMMIT") and sent[1].count("UPDATE ") == 3
    assert "SET d.blockers_left = d.blockers_left - 1" in sent[1]  # the dependents' counters
    assert resets == [] and len(store._db.spare) == 1  # type: ignore[attr-defined]
    unblocked = await board.claim_next("b", 30)
    assert unblocked is not None and unblocked.id == second.id
    with statements(store) as sent:  # nothing waits on the second: no counters to move
        failed = await other.fail("b", second.id, "broke")
    assert failed.status is TaskStatus.FAILED
    assert sent[1].count("UPDATE ") == 2 and "blockers" not in sent[1]


async def test_a_transition_of_a_kept_record_is_one_packet(
    store: StoreBackend, board: TaskBoard
) -> None:
    """The queue that claimed (or renewed) a task runs its next transition in one round trip:
    the locked read that checks the stored record is still the one it wrote, the writes guarded
    by that check, and the commit. A finish with dependents to move reads the row instead."""
    first = await board.create("lead", "first")
    second = await board.create("lead", "second", blocked_by=[first.id])
    third = await board.create("lead", "third")
    assert (await board.claim_next("a", 30)).id == first.id  # type: ignore[union-attr]
    async with count_round_trips(store) as counter:
        renewed = await board.renew_lease("a", first.id, 60)
    assert counter.statements[0].startswith("SELECT COALESCE(MAX(k.version = 2 AND k.value = X'")
    assert counter.statements[0].endswith(";COMMIT") and "AND @ok;" in counter.statements[0]
    assert counter.seen == ["SELECT"] and "EXISTS" not in counter.statements[0]
    assert renewed.version == 3 and await board.get(first.id) == renewed
    with pool_resets(store) as resets:
        async with count_round_trips(store) as counter:  # the second waits on it
            done = await board.complete("a", first.id, "done")
    assert counter.seen == ["SELECT", "SELECT", "UPDATE"] and "EXISTS" in counter.statements[0]
    assert "SET d.blockers_left = d.blockers_left - 1" in counter.statements[2]
    assert resets == [] and len(store._db.spare) == 1  # type: ignore[attr-defined]
    assert done.status is TaskStatus.COMPLETED and done.version == 4
    got = await board.claim_next("b", 30)
    assert got is not None and got.id == second.id  # the counter moved: claimable, and first
    async with count_round_trips(store) as counter:  # nothing waits on the second
        failed = await board.fail("b", second.id, "broke")
    assert counter.seen == ["SELECT"] and "NOT EXISTS" in counter.statements[0]
    assert failed.version == 3 and await board.get(second.id) == failed
    assert (await board.get(third.id)).status is TaskStatus.PENDING


async def test_a_kept_record_another_process_moved_on_is_read_again(
    store: StoreBackend, board: TaskBoard
) -> None:
    """A finish whose kept record is no longer the stored one writes nothing in its packet and
    runs again on the row it reads: the other process's change is kept (the test fails when the
    packet's writes ignore the check)."""
    task = await board.create("lead", "shared")
    assert await board.claim_next("a", 30) is not None
    other = TaskBoard(store, board.keys, board.clock)  # the same member in another process
    renewed = await other.renew_lease("a", task.id, 120)
    assert renewed.version == 3
    async with count_round_trips(store) as counter:
        done = await board.complete("a", task.id, "done")
    assert counter.seen == ["SELECT", "SELECT", "UPDATE"]
    stored = await board.get(task.id)
    assert stored == done and stored.version == 4 and stored.status is TaskStatus.COMPLETED
    assert [e.action for e in stored.history][-2] == [e.action for e in renewed.history][-1]
    async with count_round_trips(store) as counter:  # finished: no longer kept
        with pytest.raises(TaskStateError):
            await board.fail("a", task.id, "too late")
    assert counter.seen == ["SELECT", "ROLLBACK"]


async def test_a_dependent_enqueued_while_its_blocker_finishes_is_counted_once(
    store: StoreBackend, board: TaskBoard
) -> None:
    """The finish reads whether anything waits on the task under the task's row lock: a
    dependent created right after sees the blocker finished (its counter starts at 0); one
    created before is moved by the finish. Either way the dependent becomes claimable."""
    first = await board.create("lead", "first")
    claimed = await board.claim_next("a", 30)
    assert claimed is not None
    before = await board.create("lead", "before", blocked_by=[first.id])
    await board.complete("a", first.id, "done")
    after = await board.create("lead", "after", blocked_by=[first.id])
    ids = set()
    for member in ("a", "b"):
        got = await board.claim_next(member, 30)
        assert got is not None
        ids.add(got.id)
    assert ids == {before.id, after.id}


async def test_a_refused_or_empty_transition_rolls_back_itself(
    store: StoreBackend, board: TaskBoard
) -> None:
    """A rule's refusal and an empty pick end their transaction with ROLLBACK (and the empty
    claim then looks, unlocked, for a claimable task the pick skipped and for expired leases to
    settle: one statement and the COMMIT that ends it, in one packet)."""
    task = await board.create("lead", "only")
    assert await board.claim_next("a", 30) is not None
    with pool_resets(store) as resets:
        async with count_round_trips(store) as counter:
            with pytest.raises(NotTaskOwnerError):
                await board.complete("b", task.id, "not mine")
    assert counter.seen == ["SELECT", "ROLLBACK"]
    async with count_round_trips(store) as counter:
        assert await board.claim_next("b", 30) is None
    assert counter.seen == ["SELECT", "ROLLBACK", "SELECT"]
    assert False not in resets  # the pool sent no ROLLBACK of its own
    assert (await board.get(task.id)).version == 2  # the claim's write only


async def test_a_named_claim_reads_its_blockers_in_the_same_transaction(
    store: StoreBackend, board: TaskBoard
) -> None:
    first = await board.create("lead", "first")
    second = await board.create("lead", "second", blocked_by=[first.id])
    async with count_round_trips(store) as counter:
        with pytest.raises(Exception, match="waiting for unfinished"):
            await board.claim("b", second.id, 30)
    # the queue's transaction, then the board reads the blockers to word the refusal
    assert counter.seen == ["SELECT", "SELECT", "ROLLBACK", "SELECT", "COMMIT"]
    assert await board.claim("a", first.id, 30) is not None
    await board.complete("a", first.id, "done")
    async with count_round_trips(store) as counter:
        claimed = await board.claim("b", second.id, 30)
    assert claimed.owner == "b" and counter.seen == ["SELECT", "SELECT", "UPDATE"]


def test_asyncmy_errors_are_sorted_for_the_retry_loop() -> None:
    assert classify(mysql_errors.OperationalError(1213, "Deadlock found")) is Failure.RETRY
    assert classify(mysql_errors.OperationalError(1205, "Lock wait timeout")) is Failure.RETRY
    assert classify(mysql_errors.OperationalError(2013, "Lost connection")) is Failure.LOST
    assert classify(mysql_errors.InterfaceError(0, "Not connected")) is Failure.LOST
    assert classify(mysql_errors.ProgrammingError(1064, "syntax")) is Failure.FAILED
    assert classify(ValueError("not a driver error")) is Failure.FOREIGN


def test_parameters_are_named_for_client_side_escaping() -> None:
    assert pyformat("a = :a AND b LIKE '5%' OR c = :a") == "a = %(a)s AND b LIKE '5%%' OR c = %(a)s"


async def test_dependents_created_while_their_blockers_finish_are_all_counted(
    store: StoreBackend, board: TaskBoard
) -> None:
    """Blockers complete while their dependents are being created, on separate connections:
    whichever commits first, each dependent ends with no blockers left and is claimed."""
    blockers = [await board.create("lead", f"blocker {i}") for i in range(12)]
    for _ in blockers:
        assert await board.claim_next("a", 60) is not None
    dependents: list[str] = []

    async def finish(task_id: str, delay: float) -> None:
        await anyio.sleep(delay)
        await board.complete("a", task_id, "done")

    async def depend(task_id: str, delay: float) -> None:
        await anyio.sleep(delay)
        dependents.append((await board.create("lead", "after", blocked_by=[task_id])).id)

    async with anyio.create_task_group() as tg:  # staggered: some finish first, some after
        for i, task in enumerate(blockers):
            tg.start_soon(depend, task.id, 0.005 * i)
            tg.start_soon(finish, task.id, 0.005 * (len(blockers) - i))
    claimed = set()
    while (got := await board.claim_next("b", 60)) is not None:
        claimed.add(got.id)
    assert claimed == set(dependents) and len(dependents) == len(blockers)


async def test_a_call_that_failed_inside_its_transaction_is_rolled_back_by_the_pool(
    store: StoreBackend, board: TaskBoard
) -> None:
    """A statement that fails after a locking read leaves the transaction (and its locks) open:
    the pool rolls the connection back when it is given back."""
    task = await board.create("lead", "locked, then a failure")
    queue = board.queue
    assert isinstance(queue, MysqlBoardQueue)
    lock = f"SELECT task_id FROM {queue.t.task.name} WHERE team = %(team)s FOR UPDATE"

    async def broken(conn: Any) -> None:
        assert await mysql_rows(conn, rendered(conn, lock, {"team": queue.team})) == ((task.id,),)
        await mysql_rows(conn, "SELECT * FROM no_such_table_here")

    with pool_resets(store) as resets, pytest.raises(StoreError, match="no_such_table_here"):
        await store.with_driver("probe", broken)  # type: ignore[attr-defined]
    assert resets == [False]


async def test_a_kept_record_is_not_taken_for_another_at_the_same_version(
    store: StoreBackend, board: TaskBoard
) -> None:
    """The check compares the record's bytes, not only its version: a record deleted and written
    again with another description, then claimed again elsewhere at the same moment, is back at
    the kept version with the same lease, but it is not the kept record (the test fails when the
    check reads the version alone, or the version and the row's lease)."""
    task = await board.create("lead", "again")
    assert await board.claim_next("a", 30) is not None
    key = board.keys.task(task.id)
    edited = task.model_copy(update={"description": "edited"}).to_bytes()
    assert await store.delete(key) and await store.put(key, edited) == 1
    reclaimed = await TaskBoard(store, board.keys, board.clock).claim("a", task.id, 30)
    assert reclaimed.version == 2 and reclaimed.description == "edited"
    async with count_round_trips(store) as counter:
        done = await board.complete("a", task.id, "done")
    assert counter.seen == ["SELECT", "SELECT", "UPDATE"]
    assert done.description == "edited" and done.status is TaskStatus.COMPLETED
