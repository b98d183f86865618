"""The tables of the board's SQL queue (:mod:`.sql`), kept in the SQL store's database through its
public table-set hook (:mod:`agentscope_teams.store.sql.tablesets`).

Schema (``p`` is the store's table prefix)::

    p_task         (team, task_id, khash, seq, status, assignee, owner, attempts, max_attempts,
                    lease_until, blockers_left, dead_blockers)   PK (team, task_id)
    p_task_dep     (team, blocker_id, task_id)   PK (team, blocker_id, task_id)
    p_board_schema (version PK, description, applied_at)   the migrations below, as applied

One row per task of a team (``team`` is the SHA-256 of the team's task prefix) with the columns a
claim filters on, beside the JSON record in the store's records table (``khash``), and one row per
(blocker, dependent) pair so completing a task updates its dependents' counters in the same
transaction. ``lease_until`` is epoch seconds.

Up to 0.x these tables were the store's own migration 2; a database migrated then already has
them, and migration 1 here (which creates only what is missing) records them as they are.

Migration 2 gives each probe of a claim (:mod:`.sql`, :mod:`.sql_pg`) an index that starts at its
first candidate, so a claim reads the same few index entries at 1k or 100k tasks. On PostgreSQL
they are partial (only the rows a probe can take; finished rows are in none of them)::

    p_task_ready  (team, seq)          WHERE status = 'pending' AND no blockers left or dead
    p_task_leased (team, lease_until)  WHERE status = 'in_progress'
    p_task_held   (team, owner, seq)   WHERE status = 'in_progress'

and replace migration 1's ``p_task_pending`` and ``p_task_lease``. MariaDB/MySQL has no partial
indexes: it keeps those two (whose leading equality columns serve the same probes) and gains
``p_task_held (team, status, owner, seq)`` for the member's own held tasks. Both drop
``p_task_owner (team, owner, seq)``, which only the old two-step ``prefer_own`` read (and which
the MariaDB planner would pick over ``p_task_held`` on a small table, then walk every finished task
of the member).

Migration 3 indexes the pending tasks routed to nobody apart from those routed to a member, so a
claim never reads the tasks routed to other members (:mod:`.sql_pg`). On PostgreSQL it replaces
``p_task_ready`` with::

    p_task_free   (team, seq)            WHERE ready (as above) AND assignee IS NULL
    p_task_routed (team, assignee, seq)  WHERE ready (as above) AND assignee IS NOT NULL

Migration 4 does the same on MariaDB/MySQL (no partial indexes there): it replaces
``p_task_pending`` with::

    p_task_route  (team, status, blockers_left, dead_blockers, assignee, seq)

whose equality prefix ends at ``assignee`` (``IS NULL`` for the free probe, ``= member`` for the
member's routed one), each probe then reading in ``seq`` order. On PostgreSQL it changes nothing.

A process of an earlier release still claims correctly on the new indexes, only without an index
made for its statement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    text,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from ...store.sql import TABLE_OPTIONS, TableSet, create_table, hash_type

if TYPE_CHECKING:
    from ...store.sql import SqlStore


def _tables(md: MetaData, prefix: str) -> tuple[Table, Table]:
    task = Table(
        f"{prefix}task",
        md,
        Column("team", hash_type(), nullable=False),
        Column("task_id", String(255), nullable=False),
        Column("khash", hash_type(), nullable=False),
        Column("seq", BigInteger, nullable=False),
        Column("status", String(16), nullable=False),
        Column("assignee", String(256), nullable=True),
        Column("owner", String(256), nullable=True),
        Column("attempts", Integer, nullable=False),
        Column("max_attempts", Integer, nullable=False),
        Column("lease_until", Double, nullable=True),
        Column("blockers_left", Integer, nullable=False),
        Column("dead_blockers", Integer, nullable=False),
        PrimaryKeyConstraint("team", "task_id"),
        # claimable pending rows in claim order: a locking scan meets few rows it does not take
        Index(f"{prefix}task_pending", "team", "status", "blockers_left", "dead_blockers", "seq"),
        Index(f"{prefix}task_lease", "team", "status", "lease_until"),
        **TABLE_OPTIONS,
    )
    task_dep = Table(
        f"{prefix}task_dep",
        md,
        Column("team", hash_type(), nullable=False),
        Column("blocker_id", String(255), nullable=False),
        Column("task_id", String(255), nullable=False),
        PrimaryKeyConstraint("team", "blocker_id", "task_id"),
        **TABLE_OPTIONS,
    )
    return task, task_dep


async def _m1_task_queue(conn: AsyncConnection, tables: Mapping[str, Table]) -> None:
    for name in ("task", "task_dep"):
        await create_table(conn, tables[name])


_PG_INDEXES = (
    "CREATE INDEX IF NOT EXISTS {p}task_ready ON {p}task (team, seq)"
    " WHERE status = 'pending' AND blockers_left = 0 AND dead_blockers = 0",
    "CREATE INDEX IF NOT EXISTS {p}task_leased ON {p}task (team, lease_until)"
    " WHERE status = 'in_progress'",
    "CREATE INDEX IF NOT EXISTS {p}task_held ON {p}task (team, owner, seq)"
    " WHERE status = 'in_progress'",
    "DROP INDEX IF EXISTS {p}task_pending",
    "DROP INDEX IF EXISTS {p}task_lease",
    "DROP INDEX IF EXISTS {p}task_owner",
)
_MYSQL_INDEXES = ("CREATE INDEX {p}task_held ON {p}task (team, status, owner, seq)",)
_MYSQL_ROUTE = "CREATE INDEX {p}task_route ON {p}task (team, status, blockers_left, dead_blockers, assignee, seq)"
_PG_ROUTED = (
    "CREATE INDEX IF NOT EXISTS {p}task_free ON {p}task (team, seq)"
    " WHERE status = 'pending' AND blockers_left = 0 AND dead_blockers = 0 AND assignee IS NULL",
    "CREATE INDEX IF NOT EXISTS {p}task_routed ON {p}task (team, assignee, seq)"
    " WHERE status = 'pending' AND blockers_left = 0 AND dead_blockers = 0"
    " AND assignee IS NOT NULL",
    "DROP INDEX IF EXISTS {p}task_ready",
)


async def _m2_probe_indexes(conn: AsyncConnection, tables: Mapping[str, Table]) -> None:
    prefix = tables["task"].name.removesuffix("task")
    if conn.dialect.name == "postgresql":
        statements = list(_PG_INDEXES)
    else:  # no IF [NOT] EXISTS on MySQL: each step only when needed (a rerun finds it done)
        table = f"{prefix}task"
        has_held = await _has_index(conn, table, f"{prefix}task_held")
        statements = [] if has_held else list(_MYSQL_INDEXES)
        # task_owner (migration 1 up to 0.x) would lure the planner away from task_held
        if await _has_index(conn, table, f"{prefix}task_owner"):
            statements.append("DROP INDEX {p}task_owner ON {p}task")
    for sql in statements:
        await conn.execute(text(sql.format(p=prefix)))


async def _has_index(conn: AsyncConnection, table: str, index: str) -> bool:
    if conn.dialect.name == "sqlite":
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'index' AND tbl_name = :t AND name = :i"
    else:
        sql = (
            "SELECT 1 FROM information_schema.statistics WHERE table_schema = DATABASE() "
            "AND table_name = :t AND index_name = :i"
        )
    return (await conn.execute(text(sql), {"t": table, "i": index})).first() is not None


async def _m3_routed_indexes(conn: AsyncConnection, tables: Mapping[str, Table]) -> None:
    prefix = tables["task"].name.removesuffix("task")
    # MariaDB/MySQL: its routed index is migration 4's
    statements = list(_PG_ROUTED) if conn.dialect.name == "postgresql" else []
    for sql in statements:
        await conn.execute(text(sql.format(p=prefix)))


async def _m4_mysql_routed_index(conn: AsyncConnection, tables: Mapping[str, Table]) -> None:
    if conn.dialect.name not in ("mysql", "mariadb"):
        return  # PostgreSQL has migration 3's partial indexes; SQLite has no native queue
    table = tables["task"].name
    prefix = table.removesuffix("task")
    # no IF [NOT] EXISTS on MySQL: each step only when needed (a rerun finds it done)
    if not await _has_index(conn, table, f"{prefix}task_route"):
        await conn.execute(text(_MYSQL_ROUTE.format(p=prefix)))
    if await _has_index(conn, table, f"{prefix}task_pending"):
        await conn.execute(text(f"DROP INDEX {prefix}task_pending ON {table}"))


#: The board queue's tables; every ``SqlStore`` creates them once :mod:`.sql` is imported.
BOARD_TABLES = TableSet(
    name="board",
    define=_tables,
    migrations=(
        (1, "task, task_dep: the task board's native queue", _m1_task_queue),
        (2, "task: an index per claim probe (partial on PostgreSQL)", _m2_probe_indexes),
        (3, "task: free and routed pending tasks indexed apart", _m3_routed_indexes),
        (
            4,
            "task: free and routed pending tasks indexed apart (MariaDB/MySQL)",
            _m4_mysql_routed_index,
        ),
    ),
)


@dataclass(frozen=True)
class BoardTables:
    """The tables the queue reads and writes in one store: its own two and the store's records."""

    task: Table
    task_dep: Table
    kv: Table

    @classmethod
    def of(cls, store: SqlStore) -> BoardTables:
        tables = store.tables(BOARD_TABLES)
        return cls(tables["task"], tables["task_dep"], store.records)
