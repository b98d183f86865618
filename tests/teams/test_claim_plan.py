"""The SQL claim stops at its first claimable row: each probe is planned over its own index (no
sort, no scan of the candidates), and a database made before those indexes gets them.

Plans are read with ``EXPLAIN`` (never ``ANALYZE``: nothing runs) on a small board with
sequential scans disabled, so the planner shows what it would do on a large one. Sizes and
timings live in ``bench/claim_sql_scaling.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import utcnow
from agentscope_teams.store.sql import SqlStore
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues.sql import SqlBoardQueue
from agentscope_teams.teams.queues.sql_pg import PostgresBoardQueue

from ..backends import SERVICE_URLS
from ..conftest import require_service

pytestmark = pytest.mark.anyio
CTX = RuntimeContext(session_id="s", user_id="plan")


async def _drop(store: SqlStore, prefix: str) -> None:
    where = "current_schema()" if store.dialect == "postgresql" else "DATABASE()"

    async def run(conn: AsyncConnection) -> None:
        found = await conn.execute(
            text(f"SELECT table_name FROM information_schema.tables WHERE table_schema = {where}")
        )
        for (name,) in found.all():
            if name.startswith(prefix):
                await conn.execute(text(f"DROP TABLE IF EXISTS {name}"))

    await store.transaction("drop", run, write=True)


@pytest.fixture(params=["postgres", "mariadb"])
async def sql_store(request: pytest.FixtureRequest) -> AsyncIterator[SqlStore]:
    """A SQL store with tables of its own (a fresh prefix), dropped after the test."""
    require_service(request.param)
    prefix = f"pl{uuid.uuid4().hex[:8]}_"
    store = SqlStore(SERVICE_URLS[request.param], table_prefix=prefix)
    await store.setup()
    try:
        yield store
    finally:
        await _drop(store, prefix)
        await store.aclose()


async def _board(store: SqlStore) -> TaskBoard:
    """A board with a task held by ``me``, one by another member, one pending."""
    client = LocalTeamClient(store, CTX)
    team = await client.create_team("plan", members=[Member(name="me"), Member(name="other")])
    board = TaskBoard(store, TeamKeys(CTX.owner_scope(), team.id), native=True)
    for i in range(3):
        await board.create("lead", f"task {i}")
    assert await board.claim_next("me", 60) is not None
    assert await board.claim_next("other", 60) is not None
    return board


async def _pg_plan(board: TaskBoard, now: datetime, prefer_own: bool) -> str:
    queue = board.queue
    assert isinstance(queue, PostgresBoardQueue)
    statement, params = queue.claim_statement("me", 60.0, now, prefer_own=prefer_own)

    async def run(conn: AsyncConnection) -> str:
        await conn.execute(text("SET LOCAL enable_seqscan = off"))
        rows = await conn.execute(text("EXPLAIN " + statement.text), params)
        return "\n".join(str(r[0]) for r in rows)

    return await queue.store.transaction("explain", run)


async def analysed_claim(board: TaskBoard, member: str) -> str:
    """``EXPLAIN ANALYZE`` of ``member``'s PostgreSQL claim statement on ``board``, rolled back."""
    queue = board.queue
    assert isinstance(queue, PostgresBoardQueue)
    statement, params = queue.claim_statement(member, 60.0, utcnow(), prefer_own=False)

    async def run(conn: AsyncConnection) -> str:
        how = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "
        rows = await conn.execute(text(how + statement.text), params)
        await conn.rollback()
        return "\n".join(str(r[0]) for r in rows)

    return await queue.store.transaction("explain", run)


async def test_each_probe_of_a_postgres_claim_scans_its_partial_index(
    sql_store: SqlStore,
) -> None:
    if sql_store.dialect != "postgresql":
        pytest.skip("partial indexes are PostgreSQL's")
    board = await _board(sql_store)
    prefix = board.queue.t.task.name  # type: ignore[attr-defined]
    for prefer_own in (False, True):
        plan = await _pg_plan(board, utcnow(), prefer_own)
        assert f"Index Scan using {prefix}_leased" in plan, plan
        assert f"Index Scan using {prefix}_free" in plan, plan
        assert f"Index Scan using {prefix}_routed" in plan, plan
        assert (f"Index Scan using {prefix}_held" in plan) is prefer_own, plan
        assert "One-Time Filter" in plan, plan  # a later probe runs only when the earlier missed
        for absent in ("Sort", "Bitmap", "Seq Scan"):
            assert absent not in plan, (absent, plan)


async def test_a_postgres_claim_writes_the_picked_row_by_its_key_with_many_tasks_held(
    sql_store: SqlStore,
) -> None:
    """The claim's ``UPDATE`` of the task row finds it by the whole primary key (team, task id),
    whatever the planner estimates: with 200 tasks held on a board whose table was never
    analysed, it read every task of the team and filtered them against the pick (a claim there
    took 2.7x the one on an empty board)."""
    if sql_store.dialect != "postgresql":
        pytest.skip("the PostgreSQL claim statement")
    board = await _board(sql_store)
    for i in range(200):
        await board.create("lead", f"held {i}")
        assert await board.claim_next("other", 3600) is not None
    await board.create("lead", "the one to claim")
    plan = await analysed_claim(board, "me")
    task = board.queue.t.task.name  # type: ignore[attr-defined]
    update = plan[plan.index(f"Update on {task} t") :]
    scan = update[update.index(f"Index Scan using {task}_pkey") :].splitlines()
    assert "task_id" in scan[1] and "Index Cond" in scan[1], plan
    assert "rows=1 " in scan[0] and "Rows Removed" not in update, plan


async def test_each_probe_of_a_mariadb_claim_reads_an_index_in_order(sql_store: SqlStore) -> None:
    if sql_store.dialect != "mysql":
        pytest.skip("the MariaDB form of the claim")
    board = await _board(sql_store)
    queue = board.queue
    assert isinstance(queue, SqlBoardQueue)
    statement, params = queue.pick_statement("me", utcnow(), prefer_own=True)
    task = queue.t.task.name

    async def run(conn: AsyncConnection) -> list[dict[str, object]]:
        rows = await conn.execute(text("EXPLAIN " + statement.text), params)
        return [dict(r._mapping) for r in rows]

    plan = await sql_store.transaction("explain", run)
    probes = [r for r in plan if r["table"] == task]
    route = f"{task}_route"  # the free and the member's routed probe
    assert [r["key"] for r in probes] == [f"{task}_held", f"{task}_lease", route, route], plan
    for row in probes:  # each stops at its first row in index order: no sort of its candidates
        assert "filesort" not in str(row["Extra"]).lower(), row


async def _indexes(store: SqlStore, table: str) -> set[str]:
    if store.dialect == "postgresql":
        sql = "SELECT indexname FROM pg_indexes WHERE tablename = :t"
    else:
        sql = (
            "SELECT DISTINCT index_name FROM information_schema.statistics "
            "WHERE table_schema = DATABASE() AND table_name = :t"
        )

    async def run(conn: AsyncConnection) -> set[str]:
        return {r[0] for r in await conn.execute(text(sql), {"t": table})}

    return await store.transaction("indexes", run, single=True)


async def test_a_database_from_before_the_probe_indexes_gets_them(sql_store: SqlStore) -> None:
    """The tasks table as migration 1 left it (its two old indexes, no record of migrations 2
    to 4): a store set up on it applies them, and claims work on the rows already there."""
    board = await _board(sql_store)
    table = board.queue.t.task.name  # type: ignore[attr-defined]
    prefix = table.removesuffix("task")
    pg = sql_store.dialect == "postgresql"
    old_pg = [
        f"DROP INDEX {prefix}task_free",
        f"DROP INDEX {prefix}task_routed",
        f"DROP INDEX {prefix}task_leased",
        f"DROP INDEX {prefix}task_held",
        f"CREATE INDEX {prefix}task_pending ON {table} "
        "(team, status, blockers_left, dead_blockers, seq)",
        f"CREATE INDEX {prefix}task_lease ON {table} (team, status, lease_until)",
        f"CREATE INDEX {prefix}task_owner ON {table} (team, owner, seq)",
    ]
    old_mysql = [
        f"DROP INDEX {prefix}task_held ON {table}",
        f"DROP INDEX {prefix}task_route ON {table}",
        f"CREATE INDEX {prefix}task_pending ON {table} "
        "(team, status, blockers_left, dead_blockers, seq)",
        f"CREATE INDEX {prefix}task_owner ON {table} (team, owner, seq)",
    ]
    back = old_pg if pg else old_mysql

    async def downgrade(conn: AsyncConnection) -> None:
        for sql in back:
            await conn.execute(text(sql))
        await conn.execute(text(f"DELETE FROM {prefix}board_schema WHERE version >= 2"))

    await sql_store.transaction("downgrade", downgrade, write=True)
    assert f"{prefix}task_held" not in await _indexes(sql_store, table)
    url = SERVICE_URLS["postgres" if pg else "mariadb"]
    again = SqlStore(url, table_prefix=prefix)
    try:
        await again.setup()
        found = await _indexes(again, table)
        if pg:
            new = {f"{prefix}task_{n}" for n in ("free", "routed", "leased", "held")}
            old = {f"{prefix}task_{n}" for n in ("pending", "lease", "owner", "ready")}
            assert new <= found and not old & found
        else:
            new = {f"{prefix}task_{n}" for n in ("held", "route", "lease")}
            old = {f"{prefix}task_{n}" for n in ("owner", "pending")}
            assert new <= found and not old & found, found
        moved = TaskBoard(again, board.keys, native=True)
        claimed = await moved.claim_next("me", 60, prefer_own=True)
        assert claimed is not None and claimed.owner == "me" and claimed.attempts == 1
        fresh = await moved.claim_next("other", 60)
        assert fresh is not None and fresh.id == "t-3"
    finally:
        await again.aclose()


async def test_a_claim_statement_is_built_once_per_shape(sql_store: SqlStore) -> None:
    """Two claims of one shape by other members at other times reuse one statement object (no
    ``text()`` rebuilt per call); only the parameters differ."""
    board = await _board(sql_store)
    queue = board.queue
    assert isinstance(queue, SqlBoardQueue)
    later = utcnow()
    for own in (False, True):
        if isinstance(queue, PostgresBoardQueue):
            first, p1 = queue.claim_statement("me", 60.0, utcnow(), prefer_own=own)
            second, p2 = queue.claim_statement("other", 30.0, later, prefer_own=own)
        else:
            first, p1 = queue.pick_statement("me", utcnow(), own)
            second, p2 = queue.pick_statement("other", later, own)
        assert first is second and p1 != p2
    if isinstance(queue, PostgresBoardQueue):
        mine = queue.claim_statement("me", 60.0, later)[0]
        assert mine is not queue.claim_statement("me", 60.0, later, prefer_own=True)[0]


async def test_a_finish_moves_its_dependents_counters_through_the_dependency_key(
    sql_store: SqlStore,
) -> None:
    """The dependents' counters are updated by a join driven by ``p_task_dep``'s key: the plan
    reads the dependency table by its key and each dependent by the tasks table's key, never a
    range of the team's task rows (an ``IN (subquery)`` once made MariaDB read every one)."""
    board = await _board(sql_store)
    await board.create("lead", "waits", blocked_by=["t-3"])
    queue = board.queue
    assert isinstance(queue, SqlBoardQueue)
    statement, params = queue.dependents_update("t-3", TaskStatus.COMPLETED)
    task, dep = queue.t.task.name, queue.t.task_dep.name

    async def run(conn: AsyncConnection) -> list[dict[str, object]]:
        if sql_store.dialect == "postgresql":
            await conn.execute(text("SET LOCAL enable_seqscan = off"))
        rows = await conn.execute(text("EXPLAIN " + statement.text), params)
        return [dict(r._mapping) for r in rows]

    plan = await sql_store.transaction("explain", run)
    if sql_store.dialect == "postgresql":
        text_plan = "\n".join(str(next(iter(r.values()))) for r in plan)
        assert f"Index Only Scan using {dep}_pkey" in text_plan or (
            f"Index Scan using {dep}_pkey" in text_plan
        ), text_plan
        assert f"Index Scan using {task}_pkey" in text_plan, text_plan
    else:
        by_alias = {r["table"]: r for r in plan}  # x: the dependency table, d: the tasks table
        assert [r["table"] for r in plan] == ["x", "d"], plan
        assert by_alias["x"]["type"] == "ref" and by_alias["x"]["key"] == "PRIMARY", plan
        assert by_alias["d"]["type"] == "eq_ref" and by_alias["d"]["key"] == "PRIMARY", plan
