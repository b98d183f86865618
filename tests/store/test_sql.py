"""SqlStore specifics: URL mapping, schema setup and migrations, errors, chunked values, key bytes.

The shared semantics are in ``test_conformance.py`` / ``test_contention.py``. Tests that touch a
database use a fresh ``table_prefix`` and drop its tables afterwards.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from sqlalchemy import func, insert, select, text
from sqlalchemy.ext.asyncio import create_async_engine

from agentscope_teams.errors import (
    ConfigurationError,
    MissingDependencyError,
    SchemaVersionError,
    StoreUnavailableError,
)
from agentscope_teams.store import Entry, Key, encode_key, store_from_url
from agentscope_teams.store.sql import SqlStore, async_url
from agentscope_teams.store.sql.schema import HEAD_BYTES, LATEST, make_tables

from ..backends import SERVICE_URLS
from ..conftest import require_service
from .sql_tables import drop_store_tables

pytestmark = pytest.mark.anyio

SQL_BACKENDS = ("sqlite", "mariadb", "postgres")
SECRET = "s3cret-pw"


@pytest.fixture(params=SQL_BACKENDS)
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    require_service(request.param)
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return SERVICE_URLS[request.param]


@pytest.fixture
async def prefix(sql_url: str) -> AsyncIterator[str]:
    """A fresh table prefix; its tables are dropped after the test."""
    name = f"t{uuid.uuid4().hex[:8]}_"
    yield name
    await drop_store_tables(sql_url, name)


@pytest.fixture
async def store(sql_url: str, prefix: str) -> AsyncIterator[SqlStore]:
    async with SqlStore(sql_url, table_prefix=prefix, chunk_bytes=1024) as s:
        yield s


async def schema_versions(store: SqlStore) -> list[int]:
    schema = make_tables(store_prefix(store)).schema
    async with store._engine.connect() as conn:
        return list(await conn.scalars(select(schema.c.version).order_by(schema.c.version)))


def store_prefix(store: SqlStore) -> str:
    return store._t.schema.name.removesuffix("schema")


# ------------------------------------------------------------------------------------ URLs


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://u@h:5432/db", "postgresql+asyncpg://u@h:5432/db"),
        ("postgres://u:p@h/db", "postgresql+asyncpg://u:p@h/db"),
        ("postgres+asyncpg://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("mysql://root@h:3306/db", "mysql+asyncmy://root@h:3306/db"),
        ("mariadb://root@h/db", "mysql+asyncmy://root@h/db"),
        ("MySQL+asyncmy://root@h/db", "mysql+asyncmy://root@h/db"),
        ("sqlite:///rel.db", "sqlite+aiosqlite:///rel.db"),
        ("sqlite:////abs/path.db", "sqlite+aiosqlite:////abs/path.db"),
    ],
)
def test_plain_urls_map_to_async_drivers(url: str, expected: str) -> None:
    assert async_url(url) == expected


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "redis://h/0", "nonsense"])
def test_urls_without_a_database_are_rejected(url: str) -> None:
    with pytest.raises(ConfigurationError):
        async_url(url)


def test_sync_driver_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot use SQL store URL"):
        SqlStore(f"sqlite+pysqlite:///{tmp_path / 'x.db'}")


def test_unknown_driver_is_named() -> None:
    with pytest.raises(ConfigurationError, match="nosuchdriver") as info:
        SqlStore(f"postgresql+nosuchdriver://u:{SECRET}@127.0.0.1/db")
    assert SECRET not in str(info.value)


def test_explicit_uninstalled_driver_is_not_blamed_on_an_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pymysql", None)
    with pytest.raises(ConfigurationError, match="drop the '\\+driver' part") as info:
        SqlStore("mysql+pymysql://u@127.0.0.1/db")
    assert not isinstance(info.value, MissingDependencyError)


@pytest.mark.parametrize(
    ("url", "module", "extra"),
    [
        ("postgresql://u@127.0.0.1/db", "asyncpg", "postgres"),
        ("mysql://u@127.0.0.1/db", "asyncmy", "mysql"),
        ("sqlite:///x.db", "aiosqlite", "sql"),
    ],
)
def test_missing_driver_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, url: str, module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingDependencyError) as info:
        SqlStore(url)
    assert info.value.extra == extra
    assert f"agentscope-teams[{extra}]" in str(info.value)


def test_bad_table_prefix_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="table_prefix"):
        SqlStore(f"sqlite:///{tmp_path / 'x.db'}", table_prefix="bad-prefix; DROP")


def test_only_sqlite_is_local_to_one_host(tmp_path: Path) -> None:
    lite = store_from_url(f"sqlite:///{tmp_path / 'x.db'}")
    pg = store_from_url("postgresql://u@127.0.0.1/db")
    assert isinstance(lite, SqlStore) and isinstance(pg, SqlStore)
    assert (lite.shared_across_processes, lite.shared_across_hosts) == (True, False)
    assert (pg.shared_across_processes, pg.shared_across_hosts) == (True, True)


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://postgres:{SECRET}@127.0.0.1:1/test",
        f"mysql://root:{SECRET}@127.0.0.1:1/test",
    ],
)
async def test_unreachable_server_names_the_url_without_password(url: str) -> None:
    store = SqlStore(url, connect_timeout=5)
    with pytest.raises(StoreUnavailableError) as info:
        await store.get(("k",))
    message = str(info.value)
    assert SECRET not in message
    assert "127.0.0.1:1" in message and "***" in message
    assert "check that the server is running" in message
    await store.aclose()


async def test_a_sqlite_file_that_cannot_be_opened_fails_before_aiosqlite_connects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aiosqlite

    connects: list[object] = []
    real = aiosqlite.connect
    monkeypatch.setattr(aiosqlite, "connect", lambda *a, **k: connects.append(a) or real(*a, **k))
    folder = tmp_path / "a-folder.db"
    folder.mkdir()  # the database "file" is a folder
    store = SqlStore(f"sqlite:///{folder}")
    with pytest.raises(StoreUnavailableError) as info:
        await store.get(("k",))
    await store.aclose()
    assert "unable to open database file" in str(info.value) and str(folder) in str(info.value)
    assert "check that the file's folder exists" in str(info.value)
    # aiosqlite's failed connect leaves a worker thread that, once the event loop is closed,
    # prints a traceback ("Event loop is closed"): the path is tried before it connects
    assert connects == []


# ------------------------------------------------------------------------ setup / migrations


async def test_setup_is_idempotent_and_records_each_migration_once(
    sql_url: str, prefix: str
) -> None:
    async with SqlStore(sql_url, table_prefix=prefix) as first:
        await first.setup()
        await first.put(("k",), b"v")
    async with SqlStore(sql_url, table_prefix=prefix) as second:
        await second.setup()
        assert await second.get(("k",)) == Entry(b"v", 1)
        assert await schema_versions(second) == list(range(1, LATEST + 1))


async def test_concurrent_setup_in_one_process(sql_url: str, prefix: str) -> None:
    stores = [SqlStore(sql_url, table_prefix=prefix) for _ in range(4)]
    try:
        async with anyio.create_task_group() as tg:
            for s in stores:
                tg.start_soon(s.setup)
        assert await schema_versions(stores[0]) == list(range(1, LATEST + 1))
    finally:
        for s in stores:
            await s.aclose()


def _setup_child(url: str, prefix: str, barrier: Any, results: Any) -> None:
    async def main() -> None:
        store = SqlStore(url, table_prefix=prefix)
        await anyio.to_thread.run_sync(barrier.wait, 60)
        try:
            await store.setup()
            await store.put(("from", str(multiprocessing.current_process().pid)), b"x")
        finally:
            await store.aclose()

    try:
        anyio.run(main)
    except BaseException as e:
        results.put(repr(e))
    else:
        results.put("ok")


@pytest.mark.slow
async def test_concurrent_setup_from_processes(sql_url: str, prefix: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [
        ctx.Process(target=_setup_child, args=(sql_url, prefix, barrier, results)) for _ in range(4)
    ]
    for p in procs:
        p.start()
    outcomes = [await anyio.to_thread.run_sync(results.get, True, 120) for _ in procs]
    for p in procs:
        p.join(10)
    assert outcomes == ["ok"] * 4
    async with SqlStore(sql_url, table_prefix=prefix) as store:
        assert await schema_versions(store) == list(range(1, LATEST + 1))
        assert len(await store.list_keys(("from",))) == 4


async def test_first_operation_sets_up_lazily(sql_url: str, prefix: str) -> None:
    store = SqlStore(sql_url, table_prefix=prefix)
    try:
        assert await store.put(("lazy",), b"v") == 1
        assert await schema_versions(store) == list(range(1, LATEST + 1))
    finally:
        await store.aclose()


async def test_schema_newer_than_the_code_is_refused(sql_url: str, prefix: str) -> None:
    async with SqlStore(sql_url, table_prefix=prefix) as store:
        schema = store._t.schema
        async with store._engine.begin() as conn:
            row = {"version": LATEST + 1, "description": "from the future", "applied_at": 0.0}
            await conn.execute(insert(schema).values(**row))
    with pytest.raises(SchemaVersionError, match="upgrade"):
        async with SqlStore(sql_url, table_prefix=prefix):
            pass


async def test_injected_engine_belongs_to_the_caller(sql_url: str, prefix: str) -> None:
    engine = create_async_engine(async_url(sql_url))
    try:
        async with SqlStore(engine, table_prefix=prefix) as store:
            await store.put(("k",), b"v")
        async with engine.connect() as conn:  # still usable after the store closed
            assert await conn.scalar(text("SELECT 1")) == 1
    finally:
        await engine.dispose()


# ---------------------------------------------------------------------- values and keys


@pytest.mark.parametrize("size", [0, 1023, 1024, 1025, 5000])
async def test_values_around_the_chunk_size_round_trip(store: SqlStore, size: int) -> None:
    value = bytes(i % 251 for i in range(size))
    assert await store.put(("v",), value) == 1
    assert await store.get(("v",)) == Entry(value, 1)
    assert await store.put(("v",), value[::-1], expected_version=1) == 2
    assert await store.get(("v",)) == Entry(value[::-1], 2)
    seq = await store.append(("s",), value)
    assert await store.read(("s",), after=seq - 1) == [(seq, value)]


async def test_chunks_are_replaced_and_purged(store: SqlStore) -> None:
    big, bigger = b"a" * 3000, b"b" * 5000
    await store.put(("k",), big)
    await store.put(("k",), bigger)
    assert await store.get(("k",)) == Entry(bigger, 2)
    assert await count_rows(store, "kv_part") == 5
    await store.put(("k",), b"small")  # the old chunks are unused now
    await store.purge_expired()
    assert await count_rows(store, "kv_part") == 0
    assert await store.get(("k",)) == Entry(b"small", 3)
    await store.put(("k",), big)
    assert await store.delete(("k",))
    assert await count_rows(store, "kv_part") == 0


async def test_a_purge_deletes_only_orphaned_chunks_across_batches(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Orphans are found among the chunked values a batch at a time (here one per batch); the
    chunks of values still chunked stay, and so do those values."""
    from agentscope_teams.store.sql import store as sql_store

    monkeypatch.setattr(sql_store, "_PURGE_BATCH", 1)
    for name in ("a", "b", "c", "d"):
        await store.put((name,), name.encode() * 3000)
    for name in ("b", "d"):
        await store.put((name,), b"small now")  # their chunks are orphans
    await store.purge_expired()
    assert await count_rows(store, "kv_part") == 6  # two values of three chunks each
    for name, size in (("a", 3000), ("b", 9), ("c", 3000), ("d", 9)):
        entry = await store.get((name,))
        assert entry is not None and len(entry.value) == size


async def count_rows(store: SqlStore, table: str) -> int:
    t = getattr(store._t, table)
    async with store._engine.connect() as conn:
        return int(await conn.scalar(select(func.count()).select_from(t)) or 0)


async def test_expired_rows_are_purged(store: SqlStore) -> None:
    await store.put(("gone",), b"x" * 2000, ttl=0.05)
    await store.put(("kept",), b"y")
    await anyio.sleep(0.3)
    assert await store.purge_expired() == 1
    assert await count_rows(store, "kv") == 1
    assert await count_rows(store, "kv_part") == 0


async def test_16_mib_value_round_trips(sql_url: str, prefix: str) -> None:
    value = bytes(range(256)) * (16 * 1024 * 1024 // 256)
    async with SqlStore(sql_url, table_prefix=prefix) as store:
        assert len(value) == store.max_value_bytes
        await store.put(("big",), value)
        entry = await store.get(("big",))
        assert entry is not None and entry.value == value
        seq = await store.append(("s",), value)
        assert (await store.read(("s",)))[0] == (seq, value)


async def test_keys_are_byte_exact_and_case_sensitive(store: SqlStore) -> None:
    segments = ["a", "A", "a ", "b", "B", "é", "e", "ß", "ss"]
    for i, seg in enumerate(segments):
        await store.put(("ns", seg), str(i).encode())
    for i, seg in enumerate(segments):
        assert await store.get(("ns", seg)) == Entry(str(i).encode(), 1), seg
    listed = await store.list_keys(("ns",))
    assert listed == sorted((("ns", s) for s in segments), key=lambda k: encode_key(k).encode())


async def test_long_keys_sharing_the_indexed_head_list_in_byte_order(store: SqlStore) -> None:
    stem = "x" * (HEAD_BYTES + 100)
    keys: list[Key] = [("ns", stem + tail) for tail in ("b", "a", "c", "")]
    keys += [("ns", stem, "child"), ("ns", stem + "a", "deep", "er")]
    for key in keys:
        await store.put(key, b"v")
    expected = sorted(keys, key=encode_key)
    pages: list[Key] = []
    after: Key | None = None
    while page := await store.list_keys(("ns",), limit=2, after=after):
        pages += page
        after = page[-1]
    assert pages == expected
    assert await store.list_keys(("ns", stem)) == [("ns", stem, "child")]
    assert await store.list_keys(("ns", stem + "a")) == [("ns", stem + "a", "deep", "er")]


async def test_concurrent_appends_never_fill_a_gap_behind_a_reader(store: SqlStore) -> None:
    """A tailing reader must never see a seq at or below one it already passed appear later."""
    stream: Key = ("tail",)
    seen: list[int] = []
    done = anyio.Event()

    async def writer(w: int) -> None:
        for i in range(40):
            await store.append(stream, f"{w}:{i}".encode())

    async def reader() -> None:
        while True:
            finished = done.is_set()
            page = await store.read(stream, after=seen[-1] if seen else 0, limit=1000)
            seen.extend(seq for seq, _ in page)
            if finished and not page:
                return
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        async with anyio.create_task_group() as writers:
            for w in range(5):
                writers.start_soon(writer, w)
        done.set()
    assert seen == list(range(1, 201))


async def test_database_is_locked_is_retried(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    async with SqlStore(f"sqlite:///{path}", busy_timeout=0.05) as store:
        blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        blocker.execute("BEGIN IMMEDIATE")
        with anyio.move_on_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(store.put, ("k",), b"v")
                await anyio.sleep(0.5)  # the put keeps retrying while the lock is held
                blocker.execute("COMMIT")
        blocker.close()
        assert await store.get(("k",)) == Entry(b"v", 1)
