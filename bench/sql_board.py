"""What the SQL claim sections share: boards loaded in bulk, their tables dropped after, EXPLAIN.

A board of 100,000 tasks built through ``TaskBoard.create`` would take minutes; :func:`bulk_board`
writes the same rows (the JSON records in the store's records table, the queue's task rows) in
large ``INSERT`` s, then has the database ``ANALYZE`` the tasks table, as autovacuum would.
Each section's store uses a table prefix of its own (:func:`private_store`), dropped at the end.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import AsyncConnection

from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import utcnow
from agentscope_teams.store.sql import SqlStore
from agentscope_teams.store.sql.schema import HEAD_BYTES
from agentscope_teams.store.sql.writes import ref
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues.sql import SqlBoardQueue
from agentscope_teams.teams.rules import transitions as rules
from agentscope_teams.teams.rules.models import Task

CTX = RuntimeContext(session_id="bench", user_id="bench-sql-claim")
CHUNK = 5_000


@asynccontextmanager
async def private_store(url: str, pool: int = 20) -> AsyncIterator[SqlStore]:
    """A SQL store on ``url`` whose tables (a fresh prefix) are dropped when the block ends."""
    prefix = f"bq{uuid.uuid4().hex[:8]}_"
    store = SqlStore(url, table_prefix=prefix, pool_size=pool, max_overflow=4)
    try:
        await store.setup()
        yield store
    finally:
        await _drop_tables(store, prefix)
        await store.aclose()


async def _drop_tables(store: SqlStore, prefix: str) -> None:
    async def run(conn: AsyncConnection) -> None:
        where = (
            "table_schema = current_schema()"
            if store.dialect == "postgresql"
            else ("table_schema = DATABASE()")
        )
        found = await conn.execute(
            text(f"SELECT table_name FROM information_schema.tables WHERE {where}")
        )
        for (name,) in found:
            if name.startswith(prefix):
                await conn.execute(text(f"DROP TABLE IF EXISTS {name}"))

    await store.transaction("bench drop", run, write=True)


def _record(i: int, state: str, now: datetime) -> Task:
    task = rules.created(i, "lead", now, title=f"task {i}")
    if state == "pending":
        return task
    task = rules.claimed(task, "h", now, 3600)
    if state == "done":
        task = task.model_copy(update={"status": TaskStatus.COMPLETED, "lease_expires_at": None})
    return task


async def bulk_board(
    store: SqlStore, members: list[str], *, pending: int, held: int = 0, done: int = 0
) -> TaskBoard:
    """A new team's native board holding ``done`` completed tasks (the oldest), ``held`` tasks in
    progress under a live lease (member ``h``) and ``pending`` claimable ones."""
    client = LocalTeamClient(store, CTX)
    team = await client.create_team(
        f"bench-{uuid.uuid4().hex[:6]}", members=[Member(name=n) for n in ["h", *members]]
    )
    keys = TeamKeys(CTX.owner_scope(), team.id)
    board = TaskBoard(store, keys, native=True)
    queue = board.queue
    assert isinstance(queue, SqlBoardQueue)
    states = ["done"] * done + ["held"] * held + ["pending"] * pending
    now = utcnow()
    for start in range(0, len(states), CHUNK):
        records, rows = [], []
        for i, state in enumerate(states[start : start + CHUNK], start + 1):
            task = _record(i, state, now)
            r = ref(keys.task(task.id))
            records.append(
                {
                    "khash": r.h,
                    "khead": r.ekey[:HEAD_BYTES],
                    "ekey": r.ekey,
                    "value": task.to_bytes(),
                    "nparts": 0,
                    "version": 1,
                    "expires_at": None,
                }
            )
            rows.append(queue._row(task, {}))
        await _insert(store, queue, records, rows)
    await _analyze(store, queue)
    return board


async def _insert(
    store: SqlStore, queue: SqlBoardQueue, records: list[dict[str, Any]], rows: list[dict[str, Any]]
) -> None:
    async def run(conn: AsyncConnection) -> None:
        await conn.execute(insert(store.records), records)
        await conn.execute(insert(queue.t.task), rows)

    await store.transaction("bench load", run, write=True)


async def _analyze(store: SqlStore, queue: SqlBoardQueue) -> None:
    async def run(conn: AsyncConnection) -> None:
        table = queue.t.task.name
        await conn.execute(
            text(f"ANALYZE {'' if store.dialect == 'postgresql' else 'TABLE '}{table}")
        )

    await store.transaction("bench analyze", run, single=True)


async def explain(board: TaskBoard, *, analyze: bool, prefer_own: bool = False) -> str:
    """The plan of ``board``'s claim statement (PostgreSQL: the whole claim, ``ANALYZE``-d in a
    transaction rolled back; MariaDB: its locking read), as text."""
    queue = board.queue
    assert isinstance(queue, SqlBoardQueue)
    store = queue.store
    if store.dialect == "postgresql":
        from agentscope_teams.teams.queues.sql_pg import PostgresBoardQueue

        assert isinstance(queue, PostgresBoardQueue)
        statement, params = queue.claim_statement("b", 60.0, utcnow(), prefer_own=prefer_own)
        how = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) " if analyze else "EXPLAIN "
    else:
        statement, params = queue.pick_statement("b", utcnow(), prefer_own)
        how = "ANALYZE " if analyze else "EXPLAIN "
    async with store._engine.connect() as conn:  # rolled back: the claim is not kept
        rows = await conn.execute(text(how + statement.text), params)
        if store.dialect == "postgresql":
            lines = [str(r[0]) for r in rows]
        else:  # a table: id, select_type, table, type, possible_keys, key, ..., rows, (r_rows,) ...
            lines = [" | ".join(rows.keys())] + [" | ".join(map(str, r)) for r in rows]
        await conn.rollback()
    return "\n".join(lines)
