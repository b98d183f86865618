"""CAS put per backend next to the raw driver writing the same bytes.

A CAS put is ``put(key, value, expected_version=<current>)``: one conditional write. Its baseline is
the plainest write the backend's driver can do of the same 1 KB value, with no version check:

* Redis: redis-py ``SET``;
* PostgreSQL: asyncpg ``execute`` of an UPSERT (autocommit);
* MariaDB: asyncmy ``execute`` of an ``INSERT ... ON DUPLICATE KEY UPDATE`` (autocommit);
* SQLite: aiosqlite UPSERT + ``commit`` on a WAL database (the store's journal mode);
* file: write a temp file + ``fsync`` + ``os.replace``, in a worker thread (as the store does, since
  neither may block the event loop);
* memory: no driver; shown for scale.

Baseline and store run interleaved, round by round, against the same server or disk.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from urllib.parse import unquote, urlsplit

import anyio

from agentscope_teams.store import BaseStore, store_from_url

from .fixtures import MYSQL_URL, POSTGRES_URL, REDIS_URL
from .stats import Op, Sample, fmt, interleaved, ratio, section, table, verdict

TARGET = 1.5
VALUE_BYTES = 1024
RawWriter = Callable[[bytes], AbstractAsyncContextManager[Callable[[], Awaitable[object]]]]


@asynccontextmanager
async def _raw_redis(value: bytes) -> AsyncIterator[Callable[[], Awaitable[object]]]:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(REDIS_URL)
    key = f"bench-raw-{uuid.uuid4().hex}"
    try:
        yield lambda: client.set(key, value)
    finally:
        await client.delete(key)
        await client.aclose()


@asynccontextmanager
async def _raw_postgres(value: bytes) -> AsyncIterator[Callable[[], Awaitable[object]]]:
    import asyncpg

    conn = await asyncpg.connect(POSTGRES_URL.replace("postgresql+asyncpg://", "postgresql://"))
    table = f"bench_raw_{uuid.uuid4().hex[:12]}"
    await conn.execute(
        f"CREATE TABLE {table} (k bytea PRIMARY KEY, v bytea NOT NULL, version bigint NOT NULL)"
    )
    sql = (
        f"INSERT INTO {table} (k, v, version) VALUES ($1, $2, 1) ON CONFLICT (k) "
        f"DO UPDATE SET v = EXCLUDED.v, version = {table}.version + 1"
    )
    try:
        yield lambda: conn.execute(sql, b"k", value)
    finally:
        await conn.execute(f"DROP TABLE {table}")
        await conn.close()


@asynccontextmanager
async def _raw_mysql(value: bytes) -> AsyncIterator[Callable[[], Awaitable[object]]]:
    import asyncmy

    u = urlsplit(MYSQL_URL)
    conn = await asyncmy.connect(
        host=u.hostname or "127.0.0.1",
        port=u.port or 3306,
        user=unquote(u.username or "root"),
        password=unquote(u.password or ""),
        database=u.path.lstrip("/") or "test",
        autocommit=True,
    )
    table = f"bench_raw_{uuid.uuid4().hex[:12]}"
    sql = (
        f"INSERT INTO {table} (k, v, version) VALUES (%s, %s, 1) "
        "ON DUPLICATE KEY UPDATE v = VALUES(v), version = version + 1"
    )
    async with conn.cursor() as cur:
        await cur.execute(
            f"CREATE TABLE {table} (k VARBINARY(64) PRIMARY KEY, v LONGBLOB NOT NULL, "
            "version BIGINT NOT NULL) ENGINE=InnoDB"
        )
    try:
        async with conn.cursor() as cur:
            yield lambda: cur.execute(sql, (b"k", value))
    finally:
        async with conn.cursor() as cur:
            await cur.execute(f"DROP TABLE {table}")
        conn.close()


def _raw_sqlite(path: Path) -> RawWriter:
    @asynccontextmanager
    async def writer(value: bytes) -> AsyncIterator[Callable[[], Awaitable[object]]]:
        import aiosqlite

        async with aiosqlite.connect(path) as db:
            await db.execute("PRAGMA journal_mode=WAL")
            await db.execute("CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB, version INTEGER)")
            await db.commit()
            sql = (
                "INSERT INTO kv (k, v, version) VALUES (?, ?, 1) ON CONFLICT (k) "
                "DO UPDATE SET v = excluded.v, version = version + 1"
            )

            async def write() -> None:
                await db.execute(sql, (b"k", value))
                await db.commit()

            yield write

    return writer


def _raw_file(root: Path) -> RawWriter:
    @asynccontextmanager
    async def writer(value: bytes) -> AsyncIterator[Callable[[], Awaitable[object]]]:
        await anyio.Path(root).mkdir(parents=True, exist_ok=True)
        target = root / "k.json"

        def write() -> None:
            tmp = root / f".k.{uuid.uuid4().hex}.tmp"
            with open(tmp, "wb") as fh:
                fh.write(value)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)

        yield lambda: anyio.to_thread.run_sync(write)

    return writer


async def _measure(
    url: str, raw: RawWriter | None, value: bytes, ops: int, rounds: int
) -> dict[str, Sample]:
    key = ("bench", "o:", "u:bench", "cas", uuid.uuid4().hex)
    store: BaseStore
    async with store_from_url(url) as store:
        version = [await store.put(key, value)]

        async def cas(_: int) -> None:
            version[0] = await store.put(key, value, expected_version=version[0])

        named: dict[str, Op] = {"cas": cas}
        try:
            if raw is None:
                return await interleaved(named, ops=ops, rounds=rounds)
            async with raw(value) as write:

                async def plain(_: int) -> None:
                    await write()

                named["raw"] = plain
                return await interleaved(named, ops=ops, rounds=rounds)
        finally:
            await store.delete(key)


async def run(fast: bool = False) -> str:
    ops, rounds = (10, 3) if fast else (200, 15)
    value = os.urandom(VALUE_BYTES)
    rows: list[list[str]] = []
    verdicts: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        backends: list[tuple[str, str, RawWriter | None, str]] = [
            ("memory", "memory://", None, "-"),
            ("file", f"file://{root}/store", _raw_file(root / "raw"), "write + fsync + replace"),
            ("sqlite", f"sqlite:///{root}/s.db", _raw_sqlite(root / "raw.db"), "aiosqlite UPSERT"),
            ("postgres", POSTGRES_URL, _raw_postgres, "asyncpg UPSERT"),
            ("mariadb", MYSQL_URL, _raw_mysql, "asyncmy UPSERT"),
            ("redis", REDIS_URL, _raw_redis, "redis-py SET"),
        ]
        for name, url, raw, what in backends:
            try:
                s = await _measure(url, raw, value, ops, rounds)
            except Exception as exc:  # a service that is down: say so, keep the other rows
                rows.append([name, what, "-", "-", "-"])
                verdicts.append(f"{name}: not measured ({type(exc).__name__}: {exc})")
                continue
            rows.append(_row(name, what, s))
            if "raw" in s:
                verdicts.append(_verdict(name, s))
    body = table(["backend", "raw write", "raw µs", "CAS put µs", "CAS / raw"], rows)
    intro = (
        f"{VALUE_BYTES}-byte value, one client, median per operation over interleaved rounds "
        "± interquartile spread."
    )
    return section("CAS put per backend vs the raw driver", intro, body, verdicts)


def _row(name: str, what: str, s: dict[str, Sample]) -> list[str]:
    if "raw" not in s:
        return [name, what, "-", fmt(s["cas"]), "-"]
    return [name, what, fmt(s["raw"]), fmt(s["cas"]), f"{ratio(s['cas'], s['raw']):.2f}"]


def _verdict(name: str, s: dict[str, Sample]) -> str:
    r = ratio(s["cas"], s["raw"])
    extra = s["cas"].median - s["raw"].median
    why = f"{extra * 1e6:,.0f} µs more per put than the raw write; see the profile notes"
    return f"{name}: CAS ≤ {TARGET}x raw: {r:.2f}x — " + verdict(r <= TARGET, why)
