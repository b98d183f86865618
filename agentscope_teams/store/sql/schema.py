"""Tables and append-only migrations of :class:`~agentscope_teams.store.sql.SqlStore`.

Schema (``p`` is the table prefix, ``ast_`` by default)::

    p_schema       (version PK, description, applied_at)      applied migrations
    p_kv           (khash PK, khead, ekey, value, nparts, version, expires_at)
    p_kv_part      (khash, n, data)        PK (khash, n)      chunks of values over chunk_bytes
    p_stream_head  (sid PK, last_seq)                         per-stream sequence counter
    p_stream       (sid, seq, value, nparts)  PK (sid, seq)
    p_stream_part  (sid, seq, n, data)    PK (sid, seq, n)

Other packages keep tables of their own in the same database through the public table-set hook
(:mod:`.tablesets`): the task board's SQL queue keeps ``p_task`` and ``p_task_dep`` that way
(:mod:`agentscope_teams.teams.queues.sql_tables`). Migration 2 created those two tables up to
0.x; it stays recorded as it was, and creates nothing now (the board's own migration 1 finds them
on a database migrated then, and creates them on a new one). Migration 3 creates, on PostgreSQL
only, the function ``p_create_then_get`` (:mod:`.lease`); elsewhere it records its number only.

``khash``/``sid`` are the SHA-256 of the encoded key, so keys of any length fit a primary key.
``ekey`` holds the whole encoded key as bytes and ``khead`` its first :data:`HEAD_BYTES` bytes
(indexed): ordering by ``(khead, ekey)`` is the byte order of ``ekey``. Every key column is binary, so
equality and ordering are byte-exact and case-sensitive on every database.

Migrations run under a database-wide lock (``pg_advisory_xact_lock``, MySQL ``GET_LOCK``, SQLite
``BEGIN IMMEDIATE``) so several processes may call ``setup()`` at once. Never edit a shipped
migration; append a new one.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    insert,
    inspect,
    select,
    text,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlalchemy.types import TypeEngine

from ...errors import ConfigurationError, SchemaVersionError, StoreError
from .dialect import mysql_code

#: Bytes of the encoded key kept in the indexed ``khead`` column (fits MySQL/PG index limits).
HEAD_BYTES = 512

_MYSQL = ("mysql", "mariadb")
_PREFIX_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")
_OPTS: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
#: The options every table takes (InnoDB and utf8mb4 on MySQL/MariaDB): pass them to ``Table``.
TABLE_OPTIONS: dict[str, Any] = _OPTS


def _binary(mysql_type: TypeEngine[bytes]) -> TypeEngine[bytes]:
    """BYTEA on PostgreSQL, BLOB on SQLite, ``mysql_type`` on MySQL/MariaDB."""
    return LargeBinary().with_variant(mysql_type, *_MYSQL)


def _hash() -> TypeEngine[bytes]:
    return _binary(mysql.BINARY(32))


def hash_type() -> TypeEngine[bytes]:
    """The column type of a SHA-256 (32 bytes) such as :meth:`SqlStore.key_hash
    <.store.SqlStore.key_hash>`: BYTEA, BINARY(32) or BLOB."""
    return _hash()


def _data() -> TypeEngine[bytes]:
    return _binary(mysql.LONGBLOB())


@dataclass(frozen=True)
class Tables:
    """The SQLAlchemy tables of one prefix."""

    metadata: MetaData
    schema: Table
    kv: Table
    kv_part: Table
    stream_head: Table
    stream: Table
    stream_part: Table


def make_tables(prefix: str) -> Tables:
    """Build the table objects for ``prefix``; raise ``ConfigurationError`` for a bad prefix."""
    if not _PREFIX_RE.fullmatch(prefix):
        raise ConfigurationError(
            f"table_prefix {prefix!r} is not a valid SQL identifier prefix: use at most 40 "
            "letters, digits and underscores, not starting with a digit"
        )
    md = MetaData()
    schema = schema_table(md, prefix)
    return Tables(md, schema, *_kv_tables(md, prefix), *_stream_tables(md, prefix))


def schema_table(md: MetaData, prefix: str) -> Table:
    """``<prefix>schema``: the migrations applied, one row each."""
    return Table(
        f"{prefix}schema",
        md,
        Column("version", Integer, primary_key=True, autoincrement=False),
        Column("description", String(200), nullable=False),
        Column("applied_at", Double, nullable=False),
        **_OPTS,
    )


def _kv_tables(md: MetaData, prefix: str) -> tuple[Table, Table]:
    kv = Table(
        f"{prefix}kv",
        md,
        Column("khash", _hash(), primary_key=True),
        Column("khead", _binary(mysql.VARBINARY(HEAD_BYTES)), nullable=False),
        Column("ekey", _binary(mysql.BLOB()), nullable=False),
        Column("value", _data(), nullable=False),
        Column("nparts", Integer, nullable=False),
        Column("version", BigInteger, nullable=False),
        Column("expires_at", Double, nullable=True),
        Index(f"{prefix}kv_khead", "khead"),
        Index(f"{prefix}kv_expires", "expires_at"),
        **_OPTS,
    )
    kv_part = Table(
        f"{prefix}kv_part",
        md,
        Column("khash", _hash(), nullable=False),
        Column("n", Integer, nullable=False),
        Column("data", _data(), nullable=False),
        PrimaryKeyConstraint("khash", "n"),
        **_OPTS,
    )
    return kv, kv_part


def _stream_tables(md: MetaData, prefix: str) -> tuple[Table, Table, Table]:
    stream_head = Table(
        f"{prefix}stream_head",
        md,
        Column("sid", _hash(), primary_key=True),
        Column("last_seq", BigInteger, nullable=False),
        **_OPTS,
    )
    stream = Table(
        f"{prefix}stream",
        md,
        Column("sid", _hash(), nullable=False),
        Column("seq", BigInteger, nullable=False, autoincrement=False),
        Column("value", _data(), nullable=False),
        Column("nparts", Integer, nullable=False),
        PrimaryKeyConstraint("sid", "seq"),
        **_OPTS,
    )
    stream_part = Table(
        f"{prefix}stream_part",
        md,
        Column("sid", _hash(), nullable=False),
        Column("seq", BigInteger, nullable=False, autoincrement=False),
        Column("n", Integer, nullable=False),
        Column("data", _data(), nullable=False),
        PrimaryKeyConstraint("sid", "seq", "n"),
        **_OPTS,
    )
    return stream_head, stream, stream_part


async def create_table(conn: AsyncConnection, table: Table) -> None:
    """Create ``table`` and its indexes unless they exist (checked first: MySQL warns otherwise)."""
    have_table, have_indexes = await conn.run_sync(_existing, table.name)
    if not have_table:
        await conn.execute(CreateTable(table, if_not_exists=True))
    is_mysql = conn.dialect.name in _MYSQL
    for index in sorted(table.indexes, key=lambda i: str(i.name)):
        if index.name in have_indexes:
            continue
        try:
            # Oracle MySQL has no CREATE INDEX IF NOT EXISTS; error 1061 means it exists.
            await conn.execute(CreateIndex(index, if_not_exists=not is_mysql))
        except DBAPIError as e:
            if not (is_mysql and mysql_code(e) == 1061):
                raise


def _existing(conn: Connection, name: str) -> tuple[bool, set[str]]:
    insp = inspect(conn)
    if not insp.has_table(name):
        return False, set()
    return True, {str(i["name"]) for i in insp.get_indexes(name)}


async def _m1_initial(conn: AsyncConnection, t: Tables) -> None:
    for table in (t.kv, t.kv_part, t.stream_head, t.stream, t.stream_part):
        await create_table(conn, table)


async def _m2_task_queue(conn: AsyncConnection, t: Tables) -> None:
    """Created the board's tables up to 0.x; they are the board queue's table set now."""


async def _m3_create_then_get(conn: AsyncConnection, t: Tables) -> None:
    """PostgreSQL: the function taking a lease and reading a record in one round trip
    (:mod:`.lease`); nothing elsewhere."""
    if conn.dialect.name == "postgresql":
        from .lease import create_function

        await conn.exec_driver_sql(create_function(t))


Migration = Callable[[AsyncConnection, Tables], Awaitable[None]]

#: (version, description, step). Append only.
MIGRATIONS: tuple[tuple[int, str, Migration], ...] = (
    (1, "kv, kv_part, stream_head, stream, stream_part", _m1_initial),
    (2, "task, task_dep: the task board's native queue", _m2_task_queue),
    (3, "create_then_get: lease and read in one call (PostgreSQL)", _m3_create_then_get),
)
LATEST = MIGRATIONS[-1][0]


def lock_id(name: str) -> int:
    """A stable signed 64-bit id for ``pg_advisory_xact_lock``."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


async def migrate(
    conn: AsyncConnection,
    t: Tables,
    lock_name: str,
    more: Callable[[AsyncConnection], Awaitable[object]] | None = None,
) -> list[int]:
    """Apply missing migrations on ``conn`` under a lock, then ``more`` (the table sets' under the
    same lock); return the store's versions applied now.

    ``conn`` must not be in a transaction; this function commits.
    """
    dialect = conn.dialect.name
    if dialect == "sqlite":
        await conn.exec_driver_sql("BEGIN IMMEDIATE")
    elif dialect == "postgresql":
        await conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": lock_id(lock_name)})
    elif dialect in _MYSQL:
        got = await conn.scalar(text("SELECT GET_LOCK(:n, 120)"), {"n": lock_name[:64]})
        if got != 1:
            raise StoreError(
                f"setup could not take the MySQL lock {lock_name[:64]!r} within 120 s; another "
                "process is migrating the schema or died holding the lock, try again"
            )
    try:
        steps = [(v, d, _with_tables(step, t)) for v, d, step in MIGRATIONS]
        applied = await apply_migrations(conn, t.schema, steps)
        if more is not None:
            await more(conn)
        await conn.commit()
    except BaseException:
        await conn.rollback()
        raise
    finally:
        if dialect in _MYSQL:
            await conn.execute(text("SELECT RELEASE_LOCK(:n)"), {"n": lock_name[:64]})
            await conn.commit()
    return applied


def _with_tables(step: Migration, t: Tables) -> Callable[[AsyncConnection], Awaitable[None]]:
    async def run(conn: AsyncConnection) -> None:
        await step(conn, t)

    return run


async def apply_migrations(
    conn: AsyncConnection,
    record: Table,
    steps: Sequence[tuple[int, str, Callable[[AsyncConnection], Awaitable[None]]]],
) -> list[int]:
    """Run the ``steps`` (version, description, step) not yet in ``record`` (a table made by
    :func:`schema_table`), recording each; refuse a ``record`` newer than the newest step."""
    await create_table(conn, record)
    done = set((await conn.scalars(select(record.c.version))).all())
    newest, latest = max(done, default=0), max((v for v, _, _ in steps), default=0)
    if newest > latest:
        raise SchemaVersionError(
            f"the tables recorded in {record.name!r} are at schema version {newest}, newer than "
            f"this agentscope-teams understands ({latest}); upgrade agentscope-teams or use "
            "another table_prefix"
        )
    applied: list[int] = []
    for version, description, step in steps:
        if version in done:
            continue
        await step(conn)
        await conn.execute(
            insert(record).values(version=version, description=description, applied_at=time.time())
        )
        applied.append(version)
    return applied
