"""Expired entries free their space while a process runs, on every backend: SQL, the file store and
memory remove them on request, a bounded batch at a time (``purge_expired(limit=n)``), and
``sweep_expired`` does so periodically; Redis frees them itself. Readers never see an expired
entry, whether or not it has been removed yet."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
from sqlalchemy import func, select

from agentscope_teams.store import StoreBackend
from agentscope_teams.store.expiry import purger_of, sweep_expired
from agentscope_teams.store.jsonfile import JsonFileStore
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.store.sql import SqlStore
from agentscope_teams.store.sql.writes import ref

from ..backends import StoreSpec
from .sql_tables import drop_store_tables

SHORT = 0.3


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``check`` until it holds (a liveness guard of 30 s, not a timing threshold)."""
    deadline = time.monotonic() + 30
    while not await check():
        assert time.monotonic() < deadline, what
        await anyio.sleep(0.05)


async def _held(store: StoreBackend, key: tuple[str, ...]) -> bool:
    """Whether ``store`` still holds the bytes of ``key`` (expired or not): its row, file or item."""
    if isinstance(store, SqlStore):
        kv = store._t.kv
        async with store._engine.connect() as conn:
            stmt = select(func.count()).select_from(kv).where(kv.c.khash == ref(key).h)
            return bool((await conn.execute(stmt)).scalar())
    if isinstance(store, JsonFileStore):
        return store._key_path(key).exists()
    if isinstance(store, InMemoryStore):
        return any(item[0] == key for item in store._data.values())
    raise AssertionError(f"no way to look inside {store!r}")


async def _expired(store: StoreBackend, keys: list[tuple[str, ...]]) -> bool:
    """Whether every one of ``keys`` has expired (without touching the memory store's items: a
    read there removes an expired one)."""
    if isinstance(store, InMemoryStore):
        now = time.monotonic()
        items = [i for i in store._data.values() if i[0] in keys]
        return all(i[3] is not None and i[3] <= now for i in items)
    return all([await store.get(k) is None for k in keys])


@asynccontextmanager
async def _alone(store: StoreBackend, spec: StoreSpec) -> AsyncIterator[StoreBackend]:
    """``store``, or on SQL a store on tables of its own: every SQL store's ``setup()`` purges the
    whole table, so other tests' processes sharing the database would remove our expired rows
    (and add theirs to our batches) between the steps this test counts."""
    if not isinstance(store, SqlStore):
        yield store
        return
    prefix = f"t{uuid.uuid4().hex[:8]}_"
    try:
        async with SqlStore(spec.url, table_prefix=prefix) as own:
            yield own
    finally:
        await drop_store_tables(spec.url, prefix)


async def test_expired_entries_are_removed_a_bounded_batch_at_a_time(
    store: StoreBackend, store_spec: StoreSpec, ns: str
) -> None:
    async with _alone(store, store_spec) as own:
        await _bounded_batches(own, ns)


async def _bounded_batches(store: StoreBackend, ns: str) -> None:
    purger = purger_of(store)
    if purger is None:  # Redis: PEXPIRE frees them; nothing to ask for
        assert store.metrics_backend.startswith("redis"), store
        return
    short = [(ns, "short", str(i)) for i in range(5)]
    kept = [(ns, "kept", "forever"), (ns, "kept", "a-day")]
    for key in short:
        await store.put(key, b"x" * 100, ttl=SHORT)
    await store.put(kept[0], b"stays")
    await store.put(kept[1], b"stays", ttl=86400)
    await _until(lambda: _expired(store, short), "the short entries never expired")
    assert all([await _held(store, k) for k in short])  # gone for readers, bytes still there
    batches = []
    while removed := await purger.purge_expired(limit=2):
        assert removed <= 2, removed
        batches.append(removed)
    assert batches[0] == 2 and sum(batches) >= len(short), batches
    assert not any([await _held(store, k) for k in short])
    for key in kept:  # live entries are never touched
        entry = await store.get(key)
        assert entry is not None and entry.value == b"stays"
    assert await store.list_keys((ns, "short")) == []


async def test_an_entry_written_again_after_it_expired_is_kept(
    store: StoreBackend, ns: str
) -> None:
    purger = purger_of(store)
    if purger is None:
        return
    key = (ns, "again")
    await store.put(key, b"old", ttl=SHORT)
    await _until(lambda: _expired(store, [key]), "the entry never expired")
    await store.put(key, b"new", expected_version=0)  # created again, no TTL
    while await purger.purge_expired(limit=10):
        pass
    entry = await store.get(key)
    assert entry is not None and (entry.value, entry.version) == (b"new", 1)


async def test_the_sweep_frees_expired_entries_while_it_runs(store: StoreBackend, ns: str) -> None:
    if purger_of(store) is None:
        return
    keys = [(ns, "swept", str(i)) for i in range(7)]
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: sweep_expired(store, every=0.05, batch=3))
        for key in keys:
            await store.put(key, b"v", ttl=SHORT)
        await store.put((ns, "live"), b"v")

        async def freed() -> bool:
            return not any([await _held(store, k) for k in keys])

        await _until(freed, "the sweep never removed the expired entries")
        tg.cancel_scope.cancel()
    assert await store.get((ns, "live")) is not None


async def test_sql_chunks_of_an_expired_value_go_with_it(tmp_path: object) -> None:
    """A value over ``chunk_bytes`` is split into part rows; a batched purge removes them too."""
    async with SqlStore(f"sqlite:///{tmp_path}/chunks.db", chunk_bytes=1024) as store:
        await store.put(("big",), b"y" * 5000, ttl=SHORT)
        await store.put(("kept",), b"z" * 5000)
        await _until(lambda: _expired(store, [("big",)]), "the big entry never expired")
        assert await store.purge_expired(limit=5) == 1
        part = store._t.kv_part
        async with store._engine.connect() as conn:
            rows = (await conn.execute(select(part.c.khash).distinct())).scalars().all()
        assert rows == [ref(("kept",)).h]
        entry = await store.get(("kept",))
        assert entry is not None and entry.value == b"z" * 5000
