"""``SqlStore``: one SQLAlchemy 2 async Core backend for SQLite, MySQL/MariaDB and PostgreSQL.

How each operation maps to SQL (``live`` = not expired by the database server's clock; tables in
:mod:`.sql_schema`):

* ``get``: one ``SELECT kv LEFT JOIN kv_part`` (one snapshot; chunks only for values over
  ``chunk_bytes``).
* ``put(expected_version=None)``: one upsert (``ON CONFLICT DO UPDATE ... RETURNING`` on PostgreSQL
  and SQLite, ``ON DUPLICATE KEY UPDATE version = LAST_INSERT_ID(...)`` on MySQL); the version
  restarts at 1 over an expired row.
* ``put(expected_version=0)``: PostgreSQL/SQLite ``INSERT ... ON CONFLICT DO UPDATE ... WHERE
  expired RETURNING``; MySQL ``INSERT``, and on a duplicate key ``DELETE`` the row if expired and
  ``INSERT`` again, in one transaction.
* ``put(expected_version=n)``: ``UPDATE ... WHERE khash = ? AND version = n AND live``; the row count
  says who won. A failed condition costs one more ``SELECT`` to report the version found.
* ``delete``: in one transaction ``DELETE ... WHERE khash = ? AND live [AND version = n]``
  (``RETURNING nparts`` where supported) and then its chunks, if it had any.
* ``list_keys``: ``SELECT ekey ... ORDER BY khead, ekey LIMIT n`` (byte order of the encoding).
* ``append``: bump the stream's counter row with an upsert and insert the entry, in one
  transaction (on PostgreSQL one statement: a data-modifying CTE). The counter row stays locked
  until commit, so appends to one stream commit in ``seq`` order: a reader that saw ``seq`` N never
  later finds a new entry at or below N. ``delete_stream`` keeps the counter row.
* ``read``: ``SELECT ... WHERE sid = ? AND seq > after ORDER BY seq LIMIT n`` (+ chunks).

Values over ``chunk_bytes`` (1 MiB) are split into part rows because MySQL cannot move a statement or
row larger than ``max_allowed_packet`` (16 MiB by default on MariaDB). Deadlocks, serialization
failures and SQLite's "database is locked" are retried inside the store. On PostgreSQL single
statements run in autocommit mode (no BEGIN/COMMIT round trips). Writes on SQLite start with
``BEGIN IMMEDIATE``; the database runs in WAL mode with a ``busy_timeout``. The schema is created by :meth:`SqlStore.setup`
(``async with`` calls it); any other operation calls it once, lazily, when it was not called.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio

from ..errors import (
    ConfigurationError,
    MissingDependencyError,
    StoreError,
    StoreUnavailableError,
    VersionConflict,
)
from .base import (
    DEFAULT_MAX_VALUE_BYTES,
    Entry,
    Key,
    StoreBase,
    check_expected,
    decode_key,
    encode_key,
    encode_prefix,
    validate_key,
    validate_prefix,
)
from .url import redact_url

try:
    from sqlalchemy import (
        ColumnElement,
        Double,
        LargeBinary,
        Table,
        and_,
        case,
        delete,
        func,
        insert,
        literal,
        literal_column,
        or_,
        select,
        update,
    )
    from sqlalchemy.dialects import mysql, postgresql, sqlite
    from sqlalchemy.engine import Connection
    from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, InvalidRequestError
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

    from . import sql_schema
    from .sql_schema import HEAD_BYTES
except ImportError as _e:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("SqlStore (SQLAlchemy)", "sql") from _e

T = TypeVar("T")

DEFAULT_CHUNK_BYTES = 1024 * 1024
_MAX_ATTEMPTS = 60
_PREPARED = "agentscope_teams.sql.prepared"

# scheme -> (async dialect+driver, extra that installs the driver)
_SCHEMES = {
    "sqlite": ("sqlite+aiosqlite", "sql"),
    "postgresql": ("postgresql+asyncpg", "postgres"),
    "postgres": ("postgresql+asyncpg", "postgres"),
    "mysql": ("mysql+asyncmy", "mysql"),
    "mariadb": ("mysql+asyncmy", "mysql"),
}

# The database server's clock in seconds since the epoch, as a float.
_NOW_SQL = {
    "postgresql": "CAST(EXTRACT(EPOCH FROM statement_timestamp()) AS DOUBLE PRECISION)",
    "mysql": "UNIX_TIMESTAMP(NOW(6))",
    "sqlite": "((julianday('now') - 2440587.5) * 86400.0)",
}


def async_url(url: str) -> str:
    """Map a plain SQL URL to its async driver (``postgres://`` -> ``postgresql+asyncpg://``).

    An explicit ``+driver`` is kept; ``postgres`` and ``mariadb`` become ``postgresql`` and ``mysql``.
    """
    scheme, sep, rest = url.partition("://")
    base, _, driver = scheme.lower().partition("+")
    if not sep or base not in _SCHEMES:
        raise ConfigurationError(
            f"{redact_url(url)!r} is not a SQL store URL; use sqlite:///path.db, "
            "postgresql://user@host/db or mysql://user@host/db"
        )
    target = _SCHEMES[base][0]
    if driver:
        target = f"{target.partition('+')[0]}+{driver}"
    if base == "sqlite" and rest.strip("/") in ("", ":memory:"):
        raise ConfigurationError(
            f"SQLite store URL {url!r} names no database file; use sqlite:///path/to/store.db "
            "(or memory:// for a process-local store)"
        )
    return f"{target}://{rest}"


@dataclass(frozen=True, slots=True)
class _Ref:
    """A key with its byte encoding and the SHA-256 of it (the primary key)."""

    key: Key
    ekey: bytes
    h: bytes


def _ref(key: Key) -> _Ref:
    enc = encode_key(key).encode()
    return _Ref(key, enc, hashlib.sha256(enc).digest())


class _Retry(Exception):
    """The row changed between the write and the version check; run the operation again."""


def _reason(e: BaseException) -> str:
    orig = e.orig if isinstance(e, DBAPIError) else e
    return str(orig) or type(orig).__name__


def _kind(dialect_name: str) -> str:
    return "mysql" if dialect_name in ("mysql", "mariadb") else dialect_name


class SqlStore(StoreBase):
    """A :class:`BaseStore` on SQLite, MySQL/MariaDB or PostgreSQL through SQLAlchemy async Core.

    ``url`` is a URL (``sqlite:///path.db``, ``postgresql://...``, ``postgres://...``,
    ``mysql://...``, ``mariadb://...`` or one naming its async driver) or an ``AsyncEngine``, which then
    belongs to the caller: :meth:`aclose` does not dispose it. Tables are named ``table_prefix`` +
    name, so several stores can share one database.
    """

    shared_across_processes = True
    shared_across_hosts = True

    def __init__(
        self,
        url: str | AsyncEngine,
        *,
        table_prefix: str = "ast_",
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        pool_size: int | None = None,
        max_overflow: int | None = None,
        connect_timeout: float = 10.0,
        busy_timeout: float = 30.0,
        engine_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(max_value_bytes=max_value_bytes)
        if chunk_bytes < 1024:
            raise ConfigurationError(f"chunk_bytes must be at least 1024, got {chunk_bytes}")
        self.chunk_bytes = chunk_bytes
        self._busy_ms = int(busy_timeout * 1000)
        self._t = sql_schema.make_tables(table_prefix)
        self._owns_engine = not isinstance(url, AsyncEngine)
        if isinstance(url, AsyncEngine):
            self._engine = url
        else:
            opts = dict(engine_options or {})
            if pool_size is not None:
                opts["pool_size"] = pool_size
            if max_overflow is not None:
                opts["max_overflow"] = max_overflow
            self._engine = _create_engine(url, connect_timeout, opts)
        self.url = self._engine.url.render_as_string(hide_password=True)
        self._password = self._engine.url.password or ""
        self._kind = _kind(self._engine.dialect.name)
        if self._kind not in _NOW_SQL:
            raise ConfigurationError(f"SqlStore does not support the {self._kind!r} dialect")
        if self._kind == "sqlite":
            self.shared_across_hosts = False
        # PostgreSQL: single statements run without BEGIN/COMMIT (asyncpg autocommit is client-side).
        self._auto = (
            self._engine.execution_options(isolation_level="AUTOCOMMIT")
            if self._kind == "postgresql"
            else None
        )
        self._now: ColumnElement[float] = literal_column(_NOW_SQL[self._kind], Double())
        self._lock_name = f"agentscope_teams:{self._engine.url.database or ''}:{table_prefix}"
        self._setup_lock = anyio.Lock()
        self._ready = False
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------

    async def setup(self) -> None:
        """Create or migrate the tables (idempotent; safe from several processes at once)."""
        async with self._setup_lock:
            if self._ready:
                return
            if self._kind == "sqlite":
                await self._sqlite_init()
            await self._retrying("setup", self._migrate)
            self._ready = True
        await self.purge_expired()

    async def _migrate(self) -> None:
        async with self._open() as conn:
            await sql_schema.migrate(conn, self._t, self._lock_name)

    async def _sqlite_init(self) -> None:
        db = self._engine.url.database
        if db:
            await anyio.to_thread.run_sync(
                lambda: Path(db).expanduser().parent.mkdir(parents=True, exist_ok=True)
            )

        async def wal() -> None:
            async with self._open() as conn:
                await conn.exec_driver_sql("PRAGMA journal_mode=WAL")

        await self._retrying("setup", wal)

    async def aclose(self) -> None:
        """Dispose of the engine if this store created it."""
        if self._owns_engine and not self._closed:
            self._closed = True
            await self._engine.dispose()

    async def purge_expired(self) -> int:
        """Delete expired entries and chunks no live row uses; return how many entries went.

        Expired entries are already invisible; this only frees space. ``setup()`` runs it once.
        """
        kv, part = self._t.kv, self._t.kv_part

        async def run(conn: AsyncConnection) -> int:
            n = (await conn.execute(delete(kv).where(self._expired()))).rowcount
            used = select(kv.c.khash).where(kv.c.khash == part.c.khash, kv.c.nparts > 0)
            orphan = ~used.exists()
            await conn.execute(delete(part).where(orphan))
            return int(n)

        return await self._run("purge_expired", run, write=True)

    # -- key/value -----------------------------------------------------------------------------

    async def get(self, key: Key) -> Entry | None:
        ref = _ref(validate_key(key))
        kv, part = self._t.kv, self._t.kv_part
        joined = kv.outerjoin(part, and_(part.c.khash == kv.c.khash, kv.c.nparts > 0))
        stmt = (
            select(kv.c.version, kv.c.value, kv.c.nparts, part.c.data)
            .select_from(joined)
            .where(kv.c.khash == ref.h, self._live())
            .order_by(part.c.n)
        )

        async def run(conn: AsyncConnection) -> Entry | None:
            rows = (await conn.execute(stmt)).all()
            if not rows:
                return None
            version, value, nparts = rows[0][0], rows[0][1], rows[0][2]
            if nparts:
                chunks = [r[3] for r in rows]
                if len(chunks) != nparts or any(c is None for c in chunks):
                    raise _Retry
                value = b"".join(chunks)
            return Entry(bytes(value), int(version))

        return await self._run("get", run, single=True)

    async def put(
        self,
        key: Key,
        value: bytes,
        *,
        expected_version: int | None = None,
        ttl: float | None = None,
    ) -> int:
        ref = _ref(self._check_put(key, value, expected_version, ttl))
        inline, chunks = self._split(value)
        row = self._row(ref, inline, len(chunks), ttl)

        async def run(conn: AsyncConnection) -> int:
            version = await self._write_row(conn, ref, row, expected_version)
            if version is None:
                found = await self._live_version(conn, ref.h)
                if found == expected_version:
                    raise _Retry
                raise VersionConflict(ref.key, expected_version, found)
            if chunks:
                part = self._t.kv_part
                await conn.execute(delete(part).where(part.c.khash == ref.h))
                await self._insert_chunks(conn, part, {"khash": ref.h}, chunks)
            return version

        return await self._run("put", run, write=True, single=not chunks)

    async def delete(self, key: Key, *, expected_version: int | None = None) -> bool:
        ref = _ref(validate_key(key))
        check_expected(expected_version)
        kv = self._t.kv
        conds = [kv.c.khash == ref.h, self._live()]
        if expected_version is not None:
            conds.append(kv.c.version == expected_version)

        async def run(conn: AsyncConnection) -> bool:
            if expected_version != 0 and await self._delete_row(conn, ref.h, conds):
                return True
            if expected_version is None:
                return False
            found = await self._live_version(conn, ref.h)
            if found == expected_version == 0:
                return False
            if found == expected_version:
                raise _Retry
            raise VersionConflict(ref.key, expected_version, found)

        return await self._run("delete", run, write=True)

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        self._check_page(limit)
        p = encode_prefix(validate_prefix(prefix)).encode()
        c = self._t.kv.c
        conds = [self._live()]
        if p:
            upper = p[:-1] + b"0"  # p ends with '/'; '0' is the next byte
            conds += [c.khead >= p[:HEAD_BYTES], c.khead <= upper[:HEAD_BYTES]]
            conds += [c.ekey >= p, c.ekey < upper]
        if after is not None:
            a = encode_key(validate_key(after, "after")).encode()
            conds += [c.khead >= a[:HEAD_BYTES], c.ekey > a]
        stmt = select(c.ekey).where(*conds).order_by(c.khead, c.ekey).limit(limit)

        async def run(conn: AsyncConnection) -> list[Key]:
            return [decode_key(bytes(e).decode()) for e in await conn.scalars(stmt)]

        return await self._run("list_keys", run, single=True)

    # -- streams -------------------------------------------------------------------------------

    async def append(self, stream: Key, value: bytes) -> int:
        sid = _ref(self._check_append(stream, value)).h
        inline, chunks = self._split(value)
        st = self._t.stream

        async def run(conn: AsyncConnection) -> int:
            if self._kind == "postgresql" and not chunks:
                return await self._pg_append(conn, sid, inline)
            seq = await self._next_seq(conn, sid)
            row = {"sid": sid, "seq": seq, "value": inline, "nparts": len(chunks)}
            await conn.execute(insert(st).values(**row))
            await self._insert_chunks(conn, self._t.stream_part, {"sid": sid, "seq": seq}, chunks)
            return seq

        return await self._run("append", run, write=True, single=not chunks)

    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]:
        sid = _ref(validate_key(stream, "stream")).h
        self._check_page(limit, after)
        st = self._t.stream
        stmt = (
            select(st.c.seq, st.c.value, st.c.nparts)
            .where(st.c.sid == sid, st.c.seq > after)
            .order_by(st.c.seq)
            .limit(limit)
        )

        async def run(conn: AsyncConnection) -> list[tuple[int, bytes]]:
            rows = (await conn.execute(stmt)).all()
            chunked = [r[0] for r in rows if r[2]]
            chunks = await self._stream_chunks(conn, sid, chunked) if chunked else {}
            out: list[tuple[int, bytes]] = []
            for seq, value, nparts in rows:
                if nparts:
                    parts = chunks.get(seq, [])
                    if len(parts) != nparts:
                        break  # the stream was deleted between the two statements
                    value = b"".join(parts)
                out.append((int(seq), bytes(value)))
            return out

        return await self._run("read", run, single=True)

    async def delete_stream(self, stream: Key) -> bool:
        """Delete the entries; the counter row stays, so seqs keep growing if the stream is reused."""
        sid = _ref(validate_key(stream, "stream")).h
        head, st, part = self._t.stream_head, self._t.stream, self._t.stream_part

        async def run(conn: AsyncConnection) -> bool:
            # Locking the counter row waits for appends in flight, so none is half deleted.
            lock = select(head.c.last_seq).where(head.c.sid == sid).with_for_update()
            last = await conn.scalar(lock)
            if last is None:
                return False
            n = (await conn.execute(delete(st).where(st.c.sid == sid, st.c.seq <= last))).rowcount
            await conn.execute(delete(part).where(part.c.sid == sid, part.c.seq <= last))
            return bool(n)

        return await self._run("delete_stream", run, write=True)

    # -- statements ----------------------------------------------------------------------------

    def _live(self) -> ColumnElement[bool]:
        c = self._t.kv.c
        return or_(c.expires_at.is_(None), c.expires_at > self._now)

    def _expired(self) -> ColumnElement[bool]:
        c = self._t.kv.c
        return and_(c.expires_at.is_not(None), c.expires_at <= self._now)

    def _split(self, value: bytes) -> tuple[bytes, list[bytes]]:
        """``(inline, [])`` for a small value, ``(b"", chunks)`` for one over ``chunk_bytes``."""
        data = bytes(value)
        if len(data) <= self.chunk_bytes:
            return data, []
        size = self.chunk_bytes
        return b"", [data[i : i + size] for i in range(0, len(data), size)]

    def _row(self, ref: _Ref, inline: bytes, nparts: int, ttl: float | None) -> dict[str, Any]:
        return {
            "khash": ref.h,
            "khead": ref.ekey[:HEAD_BYTES],
            "ekey": ref.ekey,
            "value": inline,
            "nparts": nparts,
            "expires_at": None if ttl is None else self._now + ttl,
        }

    async def _write_row(
        self, conn: AsyncConnection, ref: _Ref, row: dict[str, Any], expected: int | None
    ) -> int | None:
        """Write the row if ``expected`` holds; return the new version or None."""
        if expected:
            return await self._update(conn, ref, row, expected)
        if self._kind != "mysql":
            return await self._upsert(conn, row, create_only=expected == 0)
        if expected is None:
            return await self._mysql_upsert(conn, row)
        return await self._mysql_create(conn, ref, row)

    async def _update(
        self, conn: AsyncConnection, ref: _Ref, row: dict[str, Any], expected: int
    ) -> int | None:
        c = self._t.kv.c
        stmt = (
            update(self._t.kv)
            .where(c.khash == ref.h, c.version == expected, self._live())
            .values(
                value=row["value"],
                nparts=row["nparts"],
                version=c.version + 1,
                expires_at=row["expires_at"],
            )
        )
        return expected + 1 if (await conn.execute(stmt)).rowcount == 1 else None

    async def _upsert(
        self, conn: AsyncConnection, row: dict[str, Any], *, create_only: bool
    ) -> int | None:
        """PostgreSQL/SQLite: one INSERT ... ON CONFLICT DO UPDATE ... RETURNING version."""
        kv = self._t.kv
        ins = (postgresql.insert if self._kind == "postgresql" else sqlite.insert)(kv)
        ins = ins.values(**row, version=1)
        new: dict[str, Any] = {k: ins.excluded[k] for k in ("value", "nparts", "expires_at")}
        if create_only:
            stmt = ins.on_conflict_do_update(
                index_elements=[kv.c.khash], set_={**new, "version": 1}, where=self._expired()
            )
        else:
            version = case((self._expired(), 1), else_=kv.c.version + 1)
            stmt = ins.on_conflict_do_update(
                index_elements=[kv.c.khash], set_={**new, "version": version}
            )
        found = await conn.scalar(stmt.returning(kv.c.version))
        return None if found is None else int(found)

    async def _mysql_upsert(self, conn: AsyncConnection, row: dict[str, Any]) -> int:
        """One INSERT ... ON DUPLICATE KEY UPDATE; LAST_INSERT_ID(expr) hands back the version."""
        kv = self._t.kv
        ins = mysql.insert(kv).values(**row, version=func.last_insert_id(1))
        version = case((self._expired(), 1), else_=kv.c.version + 1)
        # MySQL assigns left to right: version first, while expires_at still holds the old value.
        stmt = ins.on_duplicate_key_update(
            [
                ("version", func.last_insert_id(version)),
                ("value", ins.inserted.value),
                ("nparts", ins.inserted.nparts),
                ("expires_at", ins.inserted.expires_at),
            ]
        )
        return int((await conn.execute(stmt)).lastrowid)

    async def _mysql_create(
        self, conn: AsyncConnection, ref: _Ref, row: dict[str, Any]
    ) -> int | None:
        """INSERT; on a duplicate key replace the row only if it expired (same transaction)."""
        kv = self._t.kv
        ins = insert(kv).values(**row, version=1)
        try:
            await conn.execute(ins)
            return 1
        except IntegrityError as e:
            if sql_schema.mysql_code(e) != 1062:
                raise
        gone = await conn.execute(delete(kv).where(kv.c.khash == ref.h, self._expired()))
        if gone.rowcount == 0:
            return None
        await conn.execute(ins)
        return 1

    async def _delete_row(
        self, conn: AsyncConnection, h: bytes, conds: Sequence[ColumnElement[bool]]
    ) -> bool:
        """DELETE the row, then its chunks (skipped when RETURNING shows it had none)."""
        stmt = delete(self._t.kv).where(*conds)
        if self._engine.dialect.delete_returning:
            rows = (await conn.execute(stmt.returning(self._t.kv.c.nparts))).all()
            deleted, chunked = bool(rows), any(r[0] for r in rows)
        else:
            deleted = chunked = bool((await conn.execute(stmt)).rowcount)
        if chunked:
            part = self._t.kv_part
            await conn.execute(delete(part).where(part.c.khash == h))
        return deleted

    async def _live_version(self, conn: AsyncConnection, h: bytes) -> int:
        c = self._t.kv.c
        found = await conn.scalar(select(c.version).where(c.khash == h, self._live()))
        return 0 if found is None else int(found)

    async def _insert_chunks(
        self, conn: AsyncConnection, table: Table, ids: dict[str, Any], chunks: Sequence[bytes]
    ) -> None:
        # One statement per chunk keeps every packet far below MySQL's max_allowed_packet.
        for n, data in enumerate(chunks):
            await conn.execute(insert(table).values(**ids, n=n, data=data))

    async def _next_seq(self, conn: AsyncConnection, sid: bytes) -> int:
        """Bump the stream's counter row; its row lock is held until commit."""
        head = self._t.stream_head
        if self._kind == "mysql":
            ins = mysql.insert(head).values(sid=sid, last_seq=func.last_insert_id(1))
            bump = ins.on_duplicate_key_update(last_seq=func.last_insert_id(head.c.last_seq + 1))
            return int((await conn.execute(bump)).lastrowid)
        up = (postgresql.insert if self._kind == "postgresql" else sqlite.insert)(head)
        stmt = up.values(sid=sid, last_seq=1).on_conflict_do_update(
            index_elements=[head.c.sid], set_={"last_seq": head.c.last_seq + 1}
        )
        return int(await conn.scalar(stmt.returning(head.c.last_seq)) or 0)

    async def _pg_append(self, conn: AsyncConnection, sid: bytes, value: bytes) -> int:
        """PostgreSQL: counter bump and insert in one statement (a data-modifying CTE)."""
        head, st = self._t.stream_head, self._t.stream
        bump = (
            postgresql.insert(head)
            .values(sid=sid, last_seq=1)
            .on_conflict_do_update(
                index_elements=[head.c.sid], set_={"last_seq": head.c.last_seq + 1}
            )
            .returning(head.c.last_seq)
            .cte("bump")
        )
        row = select(
            literal(sid, LargeBinary), bump.c.last_seq, literal(value, LargeBinary), literal(0)
        )
        stmt = insert(st).from_select(["sid", "seq", "value", "nparts"], row)
        return int(await conn.scalar(stmt.returning(st.c.seq)) or 0)

    async def _stream_chunks(
        self, conn: AsyncConnection, sid: bytes, seqs: list[int]
    ) -> dict[int, list[bytes]]:
        part = self._t.stream_part
        stmt = (
            select(part.c.seq, part.c.data)
            .where(part.c.sid == sid, part.c.seq.in_(seqs))
            .order_by(part.c.seq, part.c.n)
        )
        out: dict[int, list[bytes]] = {}
        for seq, data in (await conn.execute(stmt)).all():
            out.setdefault(int(seq), []).append(bytes(data))
        return out

    # -- connections, transactions, retries ----------------------------------------------------

    async def _run(
        self,
        op: str,
        fn: Callable[[AsyncConnection], Awaitable[T]],
        *,
        write: bool = False,
        single: bool = False,
    ) -> T:
        """Run ``fn`` in a transaction (``single``: one statement, maybe autocommit), with retries."""
        if not self._ready:
            await self.setup()

        async def attempt() -> T:
            async with self._transaction(write=write, single=single) as conn:
                return await fn(conn)

        return await self._retrying(op, attempt)

    async def _retrying(self, op: str, fn: Callable[[], Awaitable[T]]) -> T:
        for attempt in range(_MAX_ATTEMPTS):
            try:
                return await fn()
            except _Retry:
                pass
            except DBAPIError as e:
                if e.connection_invalidated:
                    raise self._unavailable(e) from e
                if not self._transient(e):
                    raise StoreError(
                        f"{op} failed on {self.url}: {self._redact(_reason(e))}"
                    ) from e
            await anyio.sleep(random.uniform(0, min(0.25, 0.002 * 2**attempt)))
        raise StoreError(
            f"{op} on {self.url} kept hitting lock conflicts ({_MAX_ATTEMPTS} attempts); "
            "the database is overloaded or a transaction holds locks for too long"
        )

    @asynccontextmanager
    async def _open(self, *, auto: bool = False) -> AsyncIterator[AsyncConnection]:
        """A prepared connection; connection failures become :class:`StoreUnavailableError`."""
        engine = self._auto if auto and self._auto is not None else self._engine
        conn = engine.connect()
        try:
            await conn.start()
        except (DBAPIError, OSError) as e:
            raise self._unavailable(e) from e
        try:
            await self._prepare(conn)
            yield conn
        finally:
            with anyio.CancelScope(shield=True):
                await conn.close()

    @asynccontextmanager
    async def _transaction(self, *, write: bool, single: bool) -> AsyncIterator[AsyncConnection]:
        """Commit on success; closing the connection rolls back on error."""
        async with self._open(auto=single) as conn:
            if write and self._kind == "sqlite":
                await conn.exec_driver_sql("BEGIN IMMEDIATE")
            yield conn
            await conn.commit()

    async def _prepare(self, conn: AsyncConnection) -> None:
        """Per-connection settings, once per DBAPI connection (works on injected engines too)."""
        if self._kind == "postgresql":
            return
        raw = await conn.get_raw_connection()
        if raw.info.get(_PREPARED):
            return
        await conn.run_sync(self._prepare_sync)
        raw.info[_PREPARED] = True

    def _prepare_sync(self, conn: Connection) -> None:
        if self._kind == "sqlite":
            # Writes send BEGIN IMMEDIATE themselves; the driver then opens no transaction of its own.
            conn.exec_driver_sql(f"PRAGMA busy_timeout = {self._busy_ms}")
        else:
            # Sort whole keys: MySQL orders BLOBs by their first max_sort_length bytes only.
            conn.exec_driver_sql("SET SESSION max_sort_length = 8388608")
        conn.commit()

    def _transient(self, e: DBAPIError) -> bool:
        """Deadlock, lock timeout, serialization failure or SQLite busy/locked: safe to retry."""
        orig = e.orig
        if self._kind == "sqlite":
            code = getattr(orig, "sqlite_errorcode", None)
            return isinstance(code, int) and code & 0xFF in (5, 6)
        if self._kind == "mysql":
            return sql_schema.mysql_code(e) in (1205, 1213)
        return getattr(orig, "sqlstate", None) in ("40001", "40P01")

    def _unavailable(self, e: BaseException) -> StoreUnavailableError:
        return StoreUnavailableError(
            f"cannot reach the SQL database at {self.url}: {self._redact(_reason(e))}; check that "
            "the server is running and reachable, and the URL's host, port, user, password and "
            "database"
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._password, "***") if self._password else text


def _create_engine(url: str, connect_timeout: float, opts: dict[str, Any]) -> AsyncEngine:
    full = async_url(url)
    base = url.partition("://")[0].lower().partition("+")[0]
    kind = _SCHEMES[base][0].partition("+")[0]
    args: dict[str, Any] = {}
    if kind == "postgresql":
        args["timeout"] = connect_timeout
    elif kind == "mysql":
        args["connect_timeout"] = max(1, round(connect_timeout))
        opts.setdefault("isolation_level", "READ COMMITTED")
        opts.setdefault("pool_recycle", 3600)
    if args:
        opts["connect_args"] = {**args, **opts.get("connect_args", {})}
    try:
        return create_async_engine(full, **opts)
    except ImportError as e:
        if full.partition("://")[0] == _SCHEMES[base][0]:
            raise MissingDependencyError(
                f"SqlStore for {redact_url(url)}", _SCHEMES[base][1]
            ) from e
        raise ConfigurationError(
            f"the driver named by SQL store URL {redact_url(url)} is not installed ({e}); "
            f"install it, or drop the '+driver' part to use {_SCHEMES[base][0]}"
        ) from e
    except (ArgumentError, InvalidRequestError) as e:
        raise ConfigurationError(f"cannot use SQL store URL {redact_url(url)}: {e}") from e
