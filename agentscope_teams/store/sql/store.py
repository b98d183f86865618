"""``SqlStore``: one SQLAlchemy 2 async Core backend for SQLite, MySQL/MariaDB and PostgreSQL.

How each operation maps to SQL (``live`` = not expired by the database server's clock; tables in
:mod:`.schema`, write statements in :mod:`.writes`):

* ``get``: one ``SELECT kv LEFT JOIN kv_part`` (one snapshot; chunks only for values over
  ``chunk_bytes``). ``get_many_and_read`` (entries and stream pages): on PostgreSQL one statement
  on the asyncpg connection (:mod:`.pg_statements`), elsewhere ``get_many``, then each ``read``.
* ``put``: one upsert, a create-only insert or a versioned ``UPDATE`` (see :mod:`.writes`); the row
  count says who won. A failed condition costs one more ``SELECT`` to report the version found.
  A fenced put runs in one transaction: ``SELECT ... FOR UPDATE`` of the fence row (SQLite: the
  ``BEGIN IMMEDIATE`` write lock), the write, and on release the fence row's ``DELETE``.
  ``indexed`` is ignored: rows are listed by their key columns. On PostgreSQL a versioned put of
  an inline value with no fence is sent on the asyncpg connection (:mod:`.pg_statements`).
* ``create_then_get`` (a lease, then the record it guards): on PostgreSQL one call of a function
  of the schema (:mod:`.lease`); elsewhere the ``put``, then the ``get``.
* ``delete``: in one transaction ``DELETE ... WHERE khash = ? AND live [AND version = n]``
  (``RETURNING nparts`` where supported) and then its chunks, if it had any. A delete fenced by
  the deleted key itself (a lease given back) adds ``AND value = ? AND nparts = 0`` to the same
  statement; a fence on another key is checked as a fenced put's, ``SELECT ... FOR UPDATE``
  first. An unindexed delete (a lease given back) that finds every pooled connection busy runs on
  a connection of its own.
* ``list_keys``: ``SELECT ekey ... ORDER BY khead, ekey LIMIT n`` (byte order of the encoding).
* ``append``: bump the stream's counter row with an upsert and insert the entry, in one
  transaction (on PostgreSQL one statement: a data-modifying CTE). The counter row stays locked
  until commit, so appends to one stream commit in ``seq`` order: a reader that saw ``seq`` N never
  later finds a new entry at or below N. ``delete_stream`` keeps the counter row.
* ``read``: ``SELECT ... WHERE sid = ? AND seq > after ORDER BY seq LIMIT n`` (+ chunks).
* Signals (:class:`~..base.Signals`), PostgreSQL only: ``signal`` is one ``SELECT pg_notify(...)``,
  ``wait_signal`` waits on one shared ``LISTEN`` connection per store (:mod:`.signals`). SQLite and
  MySQL/MariaDB have no push: ``signals_enabled`` is False there and callers poll.

Values over ``chunk_bytes`` (1 MiB) are split into part rows (:mod:`.chunks`). Lock conflicts are
retried inside the store (:mod:`.database`); SQLite runs in WAL mode with a ``busy_timeout``. The
schema is created by :meth:`SqlStore.setup` (``async with`` calls it); any other operation calls it
once, lazily, when it was not called.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import anyio
from sqlalchemy import ColumnElement, Double, and_, delete, func, insert, literal_column, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ...errors import ConfigurationError, LeaseLostError, StoreBusyError, VersionConflict
from ..base import (
    DEFAULT_MAX_VALUE_BYTES,
    Entry,
    Fence,
    Key,
    StoreBackend,
    decode_key,
    encode_key,
    encode_prefix,
    validate_key,
    validate_prefix,
)
from ..capabilities import StoreCapabilities
from . import chunks as ch
from . import lease, reads
from . import pg_statements as pg
from .database import Database, Retry
from .dialect import NOW_SQL, create_engine
from .schema import HEAD_BYTES, make_tables, migrate
from .signals import Listener, Wakes, channel_name
from .tablesets import StoreTableSets, TableSetHost
from .writes import Ref, Statements, ref

T = TypeVar("T")
#: Chunked values checked per statement when :meth:`SqlStore.purge_expired` looks for orphans.
_PURGE_BATCH = 500


class SqlStore(TableSetHost, StoreBackend):
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
        chunk_bytes: int = ch.DEFAULT_CHUNK_BYTES,
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
        self._t = make_tables(table_prefix)
        self._sets = StoreTableSets(table_prefix)  # the registered table sets (.tablesets)
        self._owns_engine = not isinstance(url, AsyncEngine)
        if isinstance(url, AsyncEngine):
            self._engine = url
        else:
            opts = dict(engine_options or {})
            sizes = {"pool_size": pool_size, "max_overflow": max_overflow}
            opts.update({k: v for k, v in sizes.items() if v is not None})
            self._engine = create_engine(url, connect_timeout, opts)
        self._db = Database(self._engine, busy_timeout=busy_timeout)
        self.url = self._db.url
        self.metrics_backend = self._db.kind  # sqlite, postgresql or mysql
        if self._db.kind == "sqlite":
            self.shared_across_hosts = False
        now: ColumnElement[float] = literal_column(NOW_SQL[self._db.kind], Double())
        self._sql = Statements(self._t, self._db.kind, now, self._engine.dialect)
        self._lock_name = f"agentscope_teams:{self._engine.url.database or ''}:{table_prefix}"
        self._table_prefix = table_prefix
        self._listener: Listener | None = None
        #: PostgreSQL on asyncpg: the statements some operations send on its connection.
        self._pg = pg.Texts.of(self._t) if self._engine.dialect.driver == "asyncpg" else None
        if self._engine.dialect.driver == "asyncpg":
            args = self._engine.dialect.create_connect_args(self._engine.url)[1]
            self._listener = Listener({**args, "timeout": connect_timeout})
        #: Push wake-ups (PostgreSQL); False elsewhere, or set False to make callers poll.
        self.signals_enabled = self._listener is not None
        #: The wake-ups other packages send after their own commits (the board's finish),
        #: coalesced per channel across this store's users in the process (:class:`.Wakes`).
        self.wakes = Wakes()
        self._setup_lock = anyio.Lock()
        self._ready = False
        self._closed = False

    @property
    def capabilities(self) -> StoreCapabilities:
        """Fencing, listing; the SQL board queue and several hosts except on SQLite (whose board
        runs the generic queue); signals on PostgreSQL (unless ``signals_enabled`` is False);
        round reads (:meth:`get_many_and_read` in one statement) on PostgreSQL."""
        return StoreCapabilities(
            signals=self.signals_enabled and self._listener is not None,
            board_queue=None if self._db.kind == "sqlite" else "sql",
            shared_across_hosts=self.shared_across_hosts,
            round_reads=self._pg is not None,
            fenced_delete=True,
            purges_expired=True,
        )

    # -- lifecycle ---------------------------------------------------------------------------

    async def setup(self) -> None:
        """Create or migrate the tables, the store's and those of every registered table set
        (:mod:`.tablesets`); idempotent, and safe from several processes at once."""
        async with self._setup_lock:
            if self._ready and not self._sets.pending():
                return
            if self._db.kind == "sqlite":
                await self._db.init_sqlite()
            await self._db.retrying("setup", self._migrate)
            self._ready = True
        await self.purge_expired()

    async def _migrate(self) -> None:
        migrated: list[str] = []

        async def table_sets(conn: AsyncConnection) -> None:
            migrated.extend(await self._sets.migrate(conn))

        async with self._db.open() as conn:
            await migrate(conn, self._t, self._lock_name, table_sets)
        self._sets.done(migrated)

    async def aclose(self) -> None:
        """Close the signal connection; dispose of the engine if this store created it."""
        await super().aclose()  # the work left running on it lands first
        if self._listener is not None:
            await self._listener.aclose()
        await self._db.dispose()
        if self._owns_engine and not self._closed:
            self._closed = True
            await self._engine.dispose()

    async def purge_expired(self, limit: int | None = None) -> int:
        """Delete expired entries (at most ``limit``, the oldest-expiring first, with their
        chunks) and, without a limit, every chunk no live row uses; how many entries went.

        Expired entries are already invisible; this only frees space. ``setup()`` runs it once
        without a limit; ``serve`` in batches (:func:`~..expiry.sweep_expired`).
        """
        if limit is not None:
            self._check_page(limit)
            return await self._run(
                "purge_expired", lambda c: self._purge_some(c, limit), write=True
            )
        kv, part = self._t.kv, self._t.kv_part

        async def run(conn: AsyncConnection) -> int:
            n = (await conn.execute(delete(kv).where(self._sql.expired()))).rowcount
            # By the chunks' keys, not by an anti-join over every row: PostgreSQL planned that
            # one as a hash of the whole ``kv`` table, at every ``setup()``.
            held = list((await conn.execute(select(part.c.khash).distinct())).scalars())
            for i in range(0, len(held), _PURGE_BATCH):
                await self._drop_chunks(conn, held[i : i + _PURGE_BATCH])
            return int(n)

        return await self._run("purge_expired", run, write=True)

    async def _purge_some(self, conn: AsyncConnection, limit: int) -> int:
        """Delete at most ``limit`` expired rows (found by the ``expires_at`` index, checked
        again as they are deleted) and the chunks of those that had some."""
        kv = self._t.kv
        found = select(kv.c.khash, kv.c.nparts).where(self._sql.expired())
        rows = (await conn.execute(found.order_by(kv.c.expires_at).limit(limit))).all()
        if not rows:
            return 0
        gone = delete(kv).where(kv.c.khash.in_([r[0] for r in rows]), self._sql.expired())
        n = (await conn.execute(gone)).rowcount
        await self._drop_chunks(conn, [r[0] for r in rows if r[1] > 0])
        return int(n)

    async def _drop_chunks(self, conn: AsyncConnection, hashes: list[bytes]) -> None:
        """Delete the chunks of ``hashes`` that no live chunked row uses."""
        if not hashes:
            return
        kv, part = self._t.kv, self._t.kv_part
        live = kv.c.khash.in_(hashes) & (kv.c.nparts > 0)
        using = set((await conn.execute(select(kv.c.khash).where(live))).scalars())
        dead = [h for h in hashes if h not in using]
        if dead:  # checked again as it deletes: a value written meanwhile keeps its chunks
            used = select(kv.c.khash).where(kv.c.khash == part.c.khash, kv.c.nparts > 0)
            await conn.execute(delete(part).where(part.c.khash.in_(dead), ~used.exists()))

    # -- key/value -----------------------------------------------------------------------------

    async def get(self, key: Key) -> Entry | None:
        h = ref(validate_key(key)).h
        kv, part = self._t.kv, self._t.kv_part
        joined = kv.outerjoin(part, and_(part.c.khash == kv.c.khash, kv.c.nparts > 0))
        stmt = (
            select(kv.c.version, kv.c.value, kv.c.nparts, part.c.data)
            .select_from(joined)
            .where(kv.c.khash == h, self._sql.live())
            .order_by(part.c.n)
        )

        async def run(conn: AsyncConnection) -> Entry | None:
            rows = (await conn.execute(stmt)).all()
            return reads.entry_of(rows) if rows else None

        return await self._run("get", run, single=True)

    async def get_many(self, keys: Sequence[Key]) -> list[Entry | None]:
        """One ``SELECT ... WHERE khash IN (...)`` per chunk of keys (:mod:`.reads`)."""
        hs = reads.hashes(keys)
        found: dict[bytes, Entry] = {}
        for chunk in reads.chunks(hs):

            async def run(conn: AsyncConnection, chunk: list[bytes] = chunk) -> dict[bytes, Entry]:
                return await reads.read_chunk(conn, self._t, self._sql.live(), chunk)

            found.update(await self._run("get_many", run, single=True))
        return [found.get(h) for h in hs]

    async def get_many_and_read(
        self, keys: Sequence[Key], pages: Sequence[tuple[Key, int, int]]
    ) -> tuple[list[Entry | None], list[list[tuple[int, bytes]]]]:
        """:meth:`get_many` of ``keys`` and :meth:`read` of each ``(stream, after, limit)`` of
        ``pages``: on PostgreSQL one statement on the driver's connection, one snapshot
        (:mod:`.pg_statements`); elsewhere, or for more keys than one ``get_many`` chunk, those
        calls one after the other."""
        hs = reads.hashes(keys)
        sids = [ref(validate_key(s, "stream")).h for s, _, _ in pages]
        for _, after, limit in pages:
            self._check_page(limit, after)
        texts = self._pg
        if texts is None or len(set(hs)) > reads.CHUNK:
            entries = await self.get_many(keys)
            return entries, [await self.read(s, after=a, limit=n) for s, a, n in pages]
        afters, limits = [a for _, a, _ in pages], [n for _, _, n in pages]

        async def run(conn: Any) -> tuple[list[Entry | None], list[list[tuple[int, bytes]]]]:
            rows = await conn.fetch(texts.round, list(dict.fromkeys(hs)), sids, afters, limits)
            return pg.round_of(rows, hs, len(pages))  # torn chunks: Retry, read again

        await self._ensure_setup()
        return await self._db.driver("get_many_and_read", run)

    async def put(
        self,
        key: Key,
        value: bytes,
        *,
        expected_version: int | None = None,
        ttl: float | None = None,
        indexed: bool = True,
        fence: Fence | None = None,
    ) -> int:
        r = ref(self._check_put(key, value, expected_version, ttl))
        f = self._check_fence(r.key, fence)
        fr = None if f is None else ref(f.key)
        inline, chunks = ch.split(value, self.chunk_bytes)
        if expected_version and f is None and not chunks and self._pg is not None:
            return await self._pg_update(r, inline, expected_version, ttl)
        row = self._sql.row(r, inline, len(chunks), ttl)

        async def run(conn: AsyncConnection) -> int:
            if f is not None and fr is not None and not await self._sql.holds(conn, fr.h, f.value):
                raise LeaseLostError(r.key, f.key)
            version = await self._sql.write_row(conn, r, row, expected_version)
            if version is None:
                found = await self._sql.live_version(conn, r.h)
                if found == expected_version:
                    raise Retry
                raise VersionConflict(r.key, expected_version, found)
            if chunks:
                part = self._t.kv_part
                await conn.execute(delete(part).where(part.c.khash == r.h))
                await ch.insert_chunks(conn, part, {"khash": r.h}, chunks)
            if f is not None and fr is not None and f.release:
                await self._sql.delete_row(conn, fr.h, [self._t.kv.c.khash == fr.h])
            return version

        # A fenced write is a transaction: the fence row stays locked from the check to the commit.
        single = not chunks and f is None
        return await self._run("put", run, write=True, single=single)

    async def _pg_update(self, r: Ref, inline: bytes, expected: int, ttl: float | None) -> int:
        """``put(expected_version=expected)`` of an inline value with no fence on PostgreSQL: one
        statement on the driver's connection (:func:`.pg_statements.update`)."""
        texts, seconds = self._pg, None if ttl is None else float(ttl)
        assert texts is not None

        async def run(conn: Any) -> tuple[bool, int]:
            return await pg.update(conn, texts, r.h, inline, expected, seconds)

        await self._ensure_setup()
        written, version = await self._db.driver("put", run)
        if not written:
            raise VersionConflict(r.key, expected, version)
        return version

    async def create_then_get(
        self, key: Key, value: bytes, *, ttl: float, read: Key
    ) -> tuple[int, Entry | None]:
        """Create the unindexed entry ``key`` and read ``read`` after it (see
        :func:`~.base.create_then_get`): on PostgreSQL one call of the schema's function
        (:mod:`.lease`), elsewhere (and for a value that needs chunks) the write, then the read."""
        r = ref(self._check_put(key, value, 0, ttl))
        inline, chunks = ch.split(value, self.chunk_bytes)
        if self._db.kind == "postgresql" and not chunks:
            rh = ref(validate_key(read)).h
            args = (r.h, r.ekey[:HEAD_BYTES], r.ekey, inline, float(ttl), rh)
            statement = lease.call_statement(self._t)

            async def call(conn: Any) -> tuple[bool, int, Entry | None] | None:
                return lease.outcome(await conn.fetch(statement, *args))

            await self._ensure_setup()
            done = await self._db.driver("create_then_get", call)
            if done is not None:
                written, version, found = done
                if not written:
                    raise VersionConflict(r.key, 0, version)
                return version, found
        version = await self.put(key, value, expected_version=0, ttl=ttl, indexed=False)
        return version, await self.get(read)

    async def delete(
        self,
        key: Key,
        *,
        expected_version: int | None = None,
        indexed: bool = True,
        fence: Fence | None = None,
    ) -> bool:
        r = ref(self._check_delete(key, expected_version))
        f = self._check_delete_fence(r.key, fence)
        kv = self._t.kv
        conds = [kv.c.khash == r.h, self._sql.live()]
        if expected_version is not None:
            conds.append(kv.c.version == expected_version)
        # A fence on the deleted key itself, of an inline value (a lease): a condition of the
        # DELETE, no statement more. Any other fence: its row is checked and locked first.
        inline = f is not None and f.key == r.key and len(f.value) <= self.chunk_bytes
        if inline and f is not None:
            conds += [kv.c.nparts == 0, kv.c.value == bytes(f.value)]
        other = None if f is None or inline else ref(f.key)

        async def run(conn: AsyncConnection) -> bool:
            if (
                f is not None
                and other is not None
                and not await self._sql.holds(conn, other.h, f.value)
            ):
                raise LeaseLostError(r.key, f.key)
            if expected_version != 0 and await self._sql.delete_row(conn, r.h, conds):
                return True
            if inline and f is not None and not await self._sql.holds(conn, r.h, f.value):
                raise LeaseLostError(r.key, f.key)
            if expected_version is None:
                if inline:  # it holds the value, yet the DELETE missed it: written meanwhile
                    raise Retry
                return False
            found = await self._sql.live_version(conn, r.h)
            if found == expected_version == 0:
                return False
            if found == expected_version:
                raise Retry
            raise VersionConflict(r.key, expected_version, found)

        try:
            return await self._run("delete", run, write=True)
        except StoreBusyError:
            if indexed:
                raise
            return await self._db.retrying("delete", lambda: self._on_reserve(run))

    async def _on_reserve(self, fn: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        """``fn`` on the connection outside the pool: an unindexed key (a lease) is deleted even
        when every pooled connection is busy, so a failed call gives its session back at once."""
        async with self._db.reserved() as conn:
            return await fn(conn)

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        self._check_page(limit)
        p = encode_prefix(validate_prefix(prefix)).encode()
        c = self._t.kv.c
        conds = [self._sql.live()]
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
        sid = ref(self._check_append(stream, value)).h
        inline, chunks = ch.split(value, self.chunk_bytes)
        st = self._t.stream

        async def run(conn: AsyncConnection) -> int:
            if self._db.kind == "postgresql" and not chunks:
                return await self._sql.pg_append(conn, sid, inline)
            seq = await self._sql.next_seq(conn, sid)
            row = {"sid": sid, "seq": seq, "value": inline, "nparts": len(chunks)}
            await conn.execute(insert(st).values(**row))
            await ch.insert_chunks(conn, self._t.stream_part, {"sid": sid, "seq": seq}, chunks)
            return seq

        return await self._run("append", run, write=True, single=not chunks)

    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]:
        sid = ref(validate_key(stream, "stream")).h
        self._check_page(limit, after)
        st, part = self._t.stream, self._t.stream_part
        stmt = (
            select(st.c.seq, st.c.value, st.c.nparts)
            .where(st.c.sid == sid, st.c.seq > after)
            .order_by(st.c.seq)
            .limit(limit)
        )

        async def run(conn: AsyncConnection) -> list[tuple[int, bytes]]:
            rows = (await conn.execute(stmt)).all()
            chunked = [r[0] for r in rows if r[2]]
            chunks = await ch.stream_chunks(conn, part, sid, chunked) if chunked else {}
            return ch.stream_entries(rows, chunks)

        return await self._run("read", run, single=True)

    async def delete_stream(self, stream: Key) -> bool:
        """Delete the entries; the counter row stays, so seqs keep growing if the stream is reused."""
        sid = ref(validate_key(stream, "stream")).h
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

    # -- signals (PostgreSQL) -------------------------------------------------------------------

    async def signal(self, channel: Key) -> None:
        """``pg_notify`` on ``channel``: wakes its waiters in every process on this database."""
        name = self._channel(channel)

        async def run(conn: AsyncConnection) -> None:
            await conn.execute(select(func.pg_notify(name, "")))

        await self._db.run("signal", run, single=True)

    async def wait_signal(self, channels: Sequence[Key], timeout: float) -> bool:  # noqa: ASYNC109
        """True when one of ``channels`` is signalled within ``timeout``; False at the timeout or,
        after sleeping it, when the listening connection cannot be opened (logged)."""
        names = [self._channel(c) for c in channels]
        assert self._listener is not None  # _channel raised otherwise
        return await self._listener.wait(names, timeout)

    def signal_channel(self, channel: Key) -> str:
        """The PostgreSQL channel ``signal`` notifies for ``channel``: a statement of another
        package (the board's finish) may ``pg_notify`` it itself, waking the same waiters."""
        return self._channel(channel)

    def _channel(self, channel: Key) -> str:
        if self._listener is None:
            raise ConfigurationError(
                f"the SQL store at {self.url} has no signals ({self._db.kind} has no LISTEN/NOTIFY); "
                "check capabilities_of(store).signals and poll when it is False"
            )
        return channel_name(self._table_prefix, validate_key(channel, "channel"))

    @property
    def table_prefix(self) -> str:
        """The prefix of this store's table names (tables of the layers above use it too)."""
        return self._table_prefix

    async def _run(
        self,
        op: str,
        fn: Callable[[AsyncConnection], Awaitable[T]],
        *,
        write: bool = False,
        single: bool = False,
    ) -> T:
        """Set up the tables on first use (and a table set registered since), then run ``fn`` with
        :meth:`Database.run`."""
        await self._ensure_setup()
        return await self._db.run(op, fn, write=write, single=single)

    async def _ensure_setup(self) -> None:
        """Set up the tables on first use, and those of a table set registered since."""
        if not self._ready or self._sets.pending():
            await self.setup()
