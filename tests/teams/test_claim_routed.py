"""A claim's cost does not grow with the pending tasks routed to other members (issue 26.1):
the SQL claims read the free tasks and the claimer's own routed ones through indexes of their
own, counted here by what the server reports it read; a database from before those indexes gets
them and its rows keep working.

The board's behaviour with routed tasks (which one a claim takes) is in ``test_board_native``;
the Redis claim's reads are counted in ``test_queue_redis_routed``.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from agentscope_teams.message import utcnow
from agentscope_teams.store.sql import SqlStore
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues.sql import SqlBoardQueue
from agentscope_teams.teams.queues.sql_pg import PostgresBoardQueue

from ..backends import SERVICE_URLS
from .test_claim_plan import _board, _indexes, analysed_claim, sql_store

__all__ = ["sql_store"]  # the fixture, shared with test_claim_plan

pytestmark = pytest.mark.anyio
#: Tasks routed to another member ahead of the free one a claim takes.
ROUTED = 300


async def _routed_board(store: SqlStore) -> TaskBoard:
    """:func:`_board` (its pending task taken too), then :data:`ROUTED` pending tasks routed to
    ``other``, then a free one."""
    board = await _board(store)
    assert await board.claim_next("other", 3600) is not None
    for i in range(ROUTED):
        await board.create("lead", f"for other {i}", assignee="other")
    await board.create("lead", "for anyone")
    return board


def _rows_read(plan: str) -> int:
    """Rows the plan's scans produced or filtered away (``EXPLAIN ANALYZE``'s counts)."""
    scans = re.findall(
        r"(?:Index|Index Only|Seq|Bitmap Heap) Scan.*actual rows=(\d+) loops=(\d+)", plan
    )
    removed = re.findall(r"Rows Removed by Filter: (\d+)", plan)
    return sum(int(r) * int(n) for r, n in scans) + sum(int(r) for r in removed)


async def test_a_postgres_claim_reads_a_few_rows_with_many_tasks_routed_to_others(
    sql_store: SqlStore,
) -> None:
    """300 pending tasks routed to ``other`` ahead of a free one: ``me``'s claim statement reads
    a few rows (it walked all 300, "Rows Removed by Filter: 300", before the free and routed
    tasks were indexed apart), and it takes the free one."""
    if sql_store.dialect != "postgresql":
        pytest.skip("the PostgreSQL claim statement")
    board = await _routed_board(sql_store)
    plan = await analysed_claim(board, "me")
    assert _rows_read(plan) <= 8, plan
    claimed = await board.claim_next("me", 60)
    assert claimed is not None and claimed.title == "for anyone"


async def _mariadb_rows_read(board: TaskBoard, member: str) -> int:
    """Index entries ``member``'s pick read (MariaDB's ``Handler_read_next`` of the session
    around it, the pick's locks rolled back)."""
    queue = board.queue
    assert isinstance(queue, SqlBoardQueue)
    statement, params = queue.pick_statement(member, utcnow())
    count = text("SHOW SESSION STATUS LIKE 'Handler_read_next'")

    async def run(conn: AsyncConnection) -> int:
        before = int((await conn.execute(count)).one()[1])
        await conn.execute(statement, params)
        after = int((await conn.execute(count)).one()[1])
        await conn.rollback()
        return after - before

    return await queue.store.transaction("rows read", run)  # type: ignore[no-any-return]


async def test_a_mariadb_claim_reads_a_few_rows_with_many_tasks_routed_to_others(
    sql_store: SqlStore,
) -> None:
    """As above on MariaDB (migration 4's ``p_task_route``): ``me``'s pick reads a few index
    entries, not the 300 tasks routed to ``other`` ahead of the free one, and takes the free one."""
    if sql_store.dialect != "mysql":
        pytest.skip("the MariaDB pick")
    board = await _routed_board(sql_store)
    assert await _mariadb_rows_read(board, "me") <= 8
    claimed = await board.claim_next("me", 60)
    assert claimed is not None and claimed.title == "for anyone"
    routed = await board.claim_next("other", 60)
    assert routed is not None and routed.title == "for other 0"


async def test_a_database_from_before_the_routed_indexes_gets_them(sql_store: SqlStore) -> None:
    """The tasks table as migration 2 left it (no record of migration 3): a store set up on it
    applies migration 3, and claims take the free and routed rows already there in order."""
    if sql_store.dialect != "postgresql":
        pytest.skip("migration 3 changes PostgreSQL's indexes only (a no-op on MariaDB)")
    board = await _routed_board(sql_store)
    table = board.queue.t.task.name  # type: ignore[attr-defined]
    prefix = table.removesuffix("task")
    migration_2 = [
        f"DROP INDEX {prefix}task_free",
        f"DROP INDEX {prefix}task_routed",
        f"CREATE INDEX {prefix}task_ready ON {table} (team, seq)"
        " WHERE status = 'pending' AND blockers_left = 0 AND dead_blockers = 0",
        f"DELETE FROM {prefix}board_schema WHERE version = 3",
    ]

    async def downgrade(conn: AsyncConnection) -> None:
        for sql in migration_2:
            await conn.execute(text(sql))

    await sql_store.transaction("downgrade", downgrade, write=True)
    again = SqlStore(SERVICE_URLS["postgres"], table_prefix=prefix)
    try:
        await again.setup()
        found = await _indexes(again, table)
        assert {f"{prefix}task_free", f"{prefix}task_routed"} <= found, found
        assert f"{prefix}task_ready" not in found, found
        moved = TaskBoard(again, board.keys, native=True)
        free = await moved.claim_next("me", 60)
        assert free is not None and free.title == "for anyone"
        routed = await moved.claim_next("other", 60)
        assert routed is not None and routed.title == "for other 0"
    finally:
        await again.aclose()


async def _lockable_pending(store: SqlStore, table: str) -> set[str]:
    """The pending task rows another connection of ``store``'s database can lock now."""
    again = SqlStore(SERVICE_URLS["postgres" if store.dialect == "postgresql" else "mariadb"])
    sql = f"SELECT task_id FROM {table} WHERE status = 'pending' FOR UPDATE SKIP LOCKED"

    async def run(conn: AsyncConnection) -> set[str]:
        found = {r[0] for r in await conn.execute(text(sql))}
        await conn.rollback()
        return found

    try:
        return await again.transaction("lockable", run)
    finally:
        await again.aclose()


async def _locked_by_a_claim(board: TaskBoard, member: str) -> set[str]:
    """The pending rows a claim by ``member`` holds locked before its commit, as seen from
    another connection: the claim's statements (PostgreSQL: the whole claim; MariaDB: its
    pick) run in a transaction left open meanwhile."""
    queue = board.queue
    store = queue.store  # type: ignore[attr-defined]
    table = queue.t.task.name  # type: ignore[attr-defined]
    before = await _lockable_pending(store, table)
    if isinstance(queue, PostgresBoardQueue):
        statement, params = queue.claim_statement(member, 60.0, utcnow())
        statements = [statement]
    else:
        raise NotImplementedError

    async def run(conn: AsyncConnection) -> set[str]:
        for statement in statements:
            await conn.execute(statement, params)
        during = await _lockable_pending(store, table)
        await conn.rollback()
        return before - during

    return await store.transaction("claim held", run)  # type: ignore[no-any-return]


@pytest.mark.parametrize("mine_first", [True, False])
async def test_a_claim_locks_only_the_row_it_takes(sql_store: SqlStore, mine_first: bool) -> None:
    """A free task and one routed to ``me`` (either first), a task routed to ``other`` between:
    while ``me``'s claim is uncommitted, another connection can lock every pending row but the
    one it takes (a row locked and not taken would make a concurrent claimer skip a task nobody
    takes, and wait with work left)."""
    if sql_store.dialect != "postgresql":
        pytest.skip(
            "MariaDB's pick locks the oldest free task and the member's oldest routed one and "
            "takes the older (an empty claim waits for a row it passed: test_claim_waits)"
        )
    board = await _board(sql_store)
    assert await board.claim_next("other", 3600) is not None  # _board's pending task
    first = await board.create("lead", "first", assignee="me" if mine_first else None)
    await board.create("lead", "between", assignee="other")
    await board.create("lead", "second", assignee=None if mine_first else "me")
    assert await _locked_by_a_claim(board, "me") == {first.id}
