"""Connections, transactions and retries of :class:`~agentscope_teams.store.sql.SqlStore`.

Deadlocks, serialization failures and SQLite's "database is locked" are retried here with jittered
backoff. Every error raised here names the database for the operator and carries a public form
without its URL, host, user, database or the driver's words
(:func:`~agentscope_teams.errors.public_message`). No pooled connection within the pool's
``pool_timeout`` is :class:`~agentscope_teams.errors.StoreBusyError`; a lease release then runs on a
connection of its own (:meth:`Database.reserved`), so a call that failed for want of a connection
still gives its session back at once. On PostgreSQL single statements run in autocommit mode (no BEGIN/COMMIT round trips), and hot
paths may send theirs on the asyncpg connection itself (:meth:`Database.driver`, :mod:`.driver`,
on connections kept between calls: :mod:`.spare`);
writes on SQLite start with ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.pool import NullPool
from sqlalchemy.util import greenlet_spawn

from ...errors import ConfigurationError, StoreBusyError, StoreError, StoreUnavailableError
from ..redact import redact_text, redact_url
from .dialect import NOW_SQL, code_of, is_transient, kind_of, reason
from .driver import Failure, Watchers, classify, closed, ended, idle, sqlstate, stranded
from .spare import Spare

T = TypeVar("T")

MAX_ATTEMPTS = 60
_LABEL = {"postgresql": "PostgreSQL", "mysql": "MySQL", "sqlite": "SQLite"}
_PREPARED = "agentscope_teams.sql.prepared"


class Retry(Exception):
    """The row changed between the write and the version check; run the operation again."""


class Database:
    """One engine with the store's connection settings, transactions and retry policy.

    ``kind`` is ``sqlite``, ``mysql`` (MariaDB too) or ``postgresql``; ``url`` hides the credentials (see :mod:`..redact`).
    """

    def __init__(self, engine: AsyncEngine, *, busy_timeout: float) -> None:
        self.engine = engine
        self._full_url = engine.url.render_as_string(hide_password=False)
        self.url = redact_url(self._full_url)
        self.kind = kind_of(engine.dialect.name)
        if self.kind not in NOW_SQL:
            raise ConfigurationError(f"SqlStore does not support the {self.kind!r} dialect")
        self._busy_ms = int(busy_timeout * 1000)
        self.label = _LABEL[self.kind]
        self._reserve: AsyncEngine | None = None  # one connection outside the pool, made on need
        self._reserve_lock = anyio.Lock()
        #: Told every statement :meth:`driver` runs (tests count round trips with it).
        self.watchers: Watchers = []
        #: Connections the driver path keeps checked out between its calls (:mod:`.spare`).
        self.spare = Spare(engine.pool)
        # PostgreSQL: single statements run without BEGIN/COMMIT (asyncpg autocommit is client-side).
        self._auto = (
            engine.execution_options(isolation_level="AUTOCOMMIT")
            if self.kind == "postgresql"
            else None
        )

    async def init_sqlite(self) -> None:
        """Create the database file's directory and switch the database to WAL mode."""
        db = self.engine.url.database
        if db and db != ":memory:" and not db.startswith("file:"):
            try:
                await anyio.to_thread.run_sync(_open_sqlite_file, db)
            except (OSError, sqlite3.Error) as e:
                raise self.unavailable(e) from None

        async def wal() -> None:
            async with self.open() as conn:
                await conn.exec_driver_sql("PRAGMA journal_mode=WAL")

        await self.retrying("setup", wal)

    async def run(
        self,
        op: str,
        fn: Callable[[AsyncConnection], Awaitable[T]],
        *,
        write: bool = False,
        single: bool = False,
    ) -> T:
        """Run ``fn`` in a transaction (``single``: one statement, maybe autocommit), with retries.

        On SQLite an attempt is shielded from cancel scopes: a cancellation waits for it (at most
        ``busy_timeout``, which the driver's thread would take anyway) and is delivered right after.
        Cut inside a statement, SQLAlchemy terminates the aiosqlite connection; a cancellation
        delivered again during that close (as every cancel scope does) leaves its closing task
        waiting forever, and ``asyncio.run`` then hangs at exit cancelling it.
        """

        async def attempt() -> T:
            with anyio.CancelScope(shield=self.kind == "sqlite"):
                async with self.transaction(write=write, single=single) as conn:
                    result = await fn(conn)
            return result

        return await self.retrying(op, attempt)

    async def driver(self, op: str, fn: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``fn`` with the driver connection of a pooled one (asyncpg: autocommit, no
        transaction open on it; asyncmy: see :mod:`.driver`), with the store's retries; its
        errors are sorted by :func:`.driver.classify`. The connection is a spare one when one
        is kept (:mod:`.spare`), else the pool's."""

        async def attempt() -> T:
            pooled = await self._kept()
            if pooled is None:
                pooled = await self._checkout()
            try:
                result = await _watched(pooled.driver_connection, fn, self.watchers)
            except Exception as e:
                error = self._driver_error(op, e)
                # The server answered: the connection is sound (else its state is unknown).
                sound = isinstance(error, StoreError | Retry)
                lost = isinstance(error, StoreUnavailableError)
                await self._give_back(pooled, keep=sound and not lost, clean=False)
                if error is e:
                    raise
                raise error from e
            except BaseException:  # cut short: the connection's state is unknown
                await self._give_back(pooled, keep=False, clean=False)
                raise
            if not (idle(pooled.driver_connection) and self.spare.keep(pooled)):
                await self._give_back(pooled, keep=True, clean=True)
            return result

        return await self.retrying(op, attempt)

    def _driver_error(self, op: str, e: Exception) -> Exception:
        """What the store raises for ``e``, raised by a statement on the driver connection."""
        failure = classify(e)
        if failure is Failure.FOREIGN:
            return e
        if failure is Failure.RETRY:
            return Retry()
        if failure is Failure.LOST:
            return self.unavailable(e)
        return self._failed(op, e, sqlstate(e))

    def _failed(self, op: str, e: BaseException, code: str) -> StoreError:
        """The error of ``op`` refused by the database for ``e`` (``code``: its own code)."""
        return StoreError(
            f"{op} failed on {self.url}: {self._redact(reason(e))}",
            public=f"{op} failed in the {self.label} store ({code}); the server's log has "
            "the details",
        )

    async def _kept(self) -> Any:
        """A spare connection to use (:meth:`.Spare.take`), or None; one whose server session
        ended while it was kept is dropped instead of failing the call."""
        while (pooled := self.spare.take()) is not None:
            if not closed(pooled.driver_connection):
                return pooled
            await self._give_back(pooled, keep=False, clean=False)
        return None

    async def _checkout(self) -> Any:
        """A connection from the engine's pool (spare ones idle too long go back first)."""
        for old in self.spare.stale():
            await self._give_back(old, keep=True, clean=True)
        try:
            return await self.engine.raw_connection()
        except (DBAPIError, OSError) as e:
            raise self.unavailable(e) from e
        except PoolTimeout as e:
            raise self.busy() from e

    async def _give_back(self, pooled: Any, *, keep: bool, clean: bool) -> None:
        """Check ``pooled`` in to the engine's pool; dropped (invalidated) unless ``keep`` (the
        call was cut short or lost it: its state is unknown). After a ``clean`` call whose last
        reply says no transaction is open (:func:`.driver.ended`) the pool sends no rollback of
        its own; after an error it always does (a failed statement may leave the locks of the
        transaction it ran in). An asyncpg connection left in a transaction is dropped
        (:func:`.driver.stranded`), as is one known to be closed (:func:`.driver.closed`)."""
        raw = pooled.driver_connection
        keep = keep and not (stranded(raw) or closed(raw))
        with anyio.CancelScope(shield=True):
            skip_reset = getattr(pooled, "_close_special", None)  # SQLAlchemy 2.0/2.1
            if keep and clean and skip_reset is not None and ended(raw):
                await greenlet_spawn(skip_reset, True)  # its COMMIT/ROLLBACK was sent
            else:
                await greenlet_spawn(pooled.close if keep else pooled.invalidate)

    async def retrying(self, op: str, fn: Callable[[], Awaitable[T]]) -> T:
        """Call ``fn`` until it neither raises :class:`Retry` nor hits a transient lock conflict."""
        for attempt in range(MAX_ATTEMPTS):
            try:
                return await fn()
            except Retry:
                pass
            except DBAPIError as e:
                if e.connection_invalidated:
                    raise self.unavailable(e) from e
                if not is_transient(self.kind, e):
                    raise self._failed(op, e, code_of(e)) from e
            await anyio.sleep(random.uniform(0, min(0.25, 0.002 * 2**attempt)))
        conflicts = f"kept hitting lock conflicts ({MAX_ATTEMPTS} attempts)"
        raise StoreError(
            f"{op} on {self.url} {conflicts}; "
            "the database is overloaded or a transaction holds locks for too long",
            public=f"{op} in the {self.label} store {conflicts}; retry later",
        )

    @asynccontextmanager
    async def open(self, *, auto: bool = False) -> AsyncIterator[AsyncConnection]:
        """A prepared connection; connection failures become :class:`StoreUnavailableError`."""
        engine = self._auto if auto and self._auto is not None else self.engine
        spare = self.spare.starved()
        if spare is not None:  # the pool has none checked in: one the driver path kept
            await self._give_back(spare, keep=True, clean=True)
        conn = engine.connect()
        try:
            await conn.start()
        except (DBAPIError, OSError) as e:
            raise self.unavailable(e) from e
        except PoolTimeout as e:
            raise self.busy() from e
        try:
            await self._prepare(conn)
            yield conn
        finally:
            with anyio.CancelScope(shield=True):
                await conn.close()

    @asynccontextmanager
    async def transaction(self, *, write: bool, single: bool) -> AsyncIterator[AsyncConnection]:
        """Commit on success; closing the connection rolls back on error."""
        async with self.open(auto=single) as conn:
            if write and self.kind == "sqlite":
                await conn.exec_driver_sql("BEGIN IMMEDIATE")
            yield conn
            await conn.commit()

    async def _prepare(self, conn: AsyncConnection) -> None:
        """Per-connection settings, once per DBAPI connection (works on injected engines too)."""
        if self.kind == "postgresql":
            return
        raw = await conn.get_raw_connection()
        if raw.info.get(_PREPARED):
            return
        await conn.run_sync(self._prepare_sync)
        raw.info[_PREPARED] = True

    def _prepare_sync(self, conn: Connection) -> None:
        if self.kind == "sqlite":
            # Writes send BEGIN IMMEDIATE themselves; the driver then opens no transaction of its own.
            conn.exec_driver_sql(f"PRAGMA busy_timeout = {self._busy_ms}")
        else:
            # Sort whole keys: MySQL orders BLOBs by their first max_sort_length bytes only.
            conn.exec_driver_sql("SET SESSION max_sort_length = 8388608")
        conn.commit()

    def unavailable(self, e: BaseException) -> StoreUnavailableError:
        hint = (
            "check that the file's folder exists or can be made and that both can be written"
            if self.kind == "sqlite"
            else "check that the server is running and reachable, and the URL's host, port, "
            "user, password and database"
        )
        return StoreUnavailableError(
            f"cannot reach the SQL database at {self.url}: {self._redact(reason(e))}; {hint}",
            public=f"the {self.label} store cannot be reached; the server's log names the cause",
        )

    def busy(self, limit: int | None = None, waited: float | None = None) -> StoreBusyError:
        """Every connection of the pool (the engine's, or ``limit`` of the driver pool) stayed
        checked out for the pool's timeout (``waited``)."""
        pool = self.engine.pool
        if limit is None:
            size = getattr(pool, "size", None)
            overflow = max(getattr(pool, "_max_overflow", 0), 0)
            limit = size() + overflow if callable(size) else None
        if waited is None:
            waited = float(getattr(pool, "_timeout", 0.0))
        held = f"all {limit} connections" if limit is not None else "every connection"
        return StoreBusyError(
            f"no free connection to {self.url} within {waited:g} s ({held} of the pool in use); "
            "retry, or raise pool_size / max_overflow (or engine_options pool_timeout)",
            limit=limit,
            waited=waited,
            public=f"the {self.label} store is busy (no free connection within {waited:g} s); "
            "retry in a moment",
        )

    @asynccontextmanager
    async def reserved(self) -> AsyncIterator[AsyncConnection]:
        """A transaction on a connection outside the pool, one at a time: for giving a lease back
        when the pool is exhausted (see the module docs). Commits on success."""
        async with self._reserve_lock:
            if self._reserve is None:
                self._reserve = _unpooled(self.engine)
            try:
                conn = await self._reserve.connect()
            except (DBAPIError, OSError) as e:
                raise self.unavailable(e) from e
            try:
                await self._prepare(conn)
                if self.kind == "sqlite":
                    await conn.exec_driver_sql("BEGIN IMMEDIATE")
                yield conn
                await conn.commit()
            finally:
                with anyio.CancelScope(shield=True):
                    await conn.close()

    async def dispose(self) -> None:
        """Give the spare connections back to the pool and close the reserve's engine (the
        pool's engine belongs to the store)."""
        for pooled in self.spare.drain():
            await self._give_back(pooled, keep=True, clean=True)
        if self._reserve is not None:
            await self._reserve.dispose()
            self._reserve = None

    def _redact(self, text: str) -> str:
        return redact_text(text, self._full_url)


def _unpooled(engine: AsyncEngine) -> AsyncEngine:
    """An engine that connects as ``engine`` does (its URL, connect arguments and per-connection
    settings: the pool's creator and events) but keeps no connection: each closes when given
    back."""
    sync, pool = engine.sync_engine, engine.sync_engine.pool
    unpooled = NullPool(pool._creator, dialect=pool._dialect, _dispatch=pool.dispatch)
    return AsyncEngine(Engine(unpooled, sync.dialect, sync.url))


async def _watched(raw: Any, fn: Callable[[Any], Awaitable[T]], watchers: Watchers) -> T:
    """``fn(raw)``; with ``watchers``, on a proxy of ``raw`` that tells them each statement."""
    return await fn(_Watched(raw, watchers) if watchers else raw)


class _Watched:
    """A driver connection (asyncpg, asyncmy) whose statements are told to ``watchers`` as they
    are sent."""

    def __init__(self, raw: Any, watchers: Watchers) -> None:
        self._raw, self._watchers = raw, watchers

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._raw, name)
        if name not in ("execute", "executemany", "fetch", "fetchrow", "fetchval", "query"):
            return call

        def told(query: str, *args: Any, **kwargs: Any) -> Any:
            for watch in list(self._watchers):
                watch(query)
            return call(query, *args, **kwargs)

        return told


def _open_sqlite_file(db: str) -> None:
    """Create the database file's directory and open the file once: a path that cannot be
    opened fails here, in one clear error (aiosqlite's failed connect leaves a thread that
    reports a traceback when the event loop is gone)."""
    path = Path(db).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    sqlite3.connect(path).close()
