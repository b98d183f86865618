"""``SqlStore.create_then_get`` (a lease taken, then the record it guards read): on PostgreSQL one
call of the schema's function (:mod:`agentscope_teams.store.sql.lease`), with the semantics of the
two statements it replaces (the generic path of :func:`~agentscope_teams.store.base.
create_then_get`, run by the same tests), a read never older than the previous holder's last
save (processes taking the lease in turn), chunked records, its migration on an old database and
the statement count pinned."""

from __future__ import annotations

import multiprocessing
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from sqlalchemy import delete, text

from agentscope_teams.errors import LeaseLostError, VersionConflict
from agentscope_teams.store import Entry, Key
from agentscope_teams.store.base import Fence, create_then_get
from agentscope_teams.store.capabilities import StoreCapabilities
from agentscope_teams.store.sql import SqlStore
from agentscope_teams.store.sql.schema import LATEST

from ..backends import POSTGRES_URL
from ..conftest import require_service
from ..teams.round_trips import count_round_trips
from .sql_tables import drop_store_tables

pytestmark = pytest.mark.anyio

LEASE: Key = ("leases", "s1")
RECORD: Key = ("sessions", "s1")


@pytest.fixture
async def prefix() -> AsyncIterator[str]:
    """A fresh table prefix on PostgreSQL; its tables and function are dropped afterwards."""
    require_service("postgres")
    name = f"l{uuid.uuid4().hex[:8]}_"
    yield name
    await drop_store_tables(POSTGRES_URL, name)


@pytest.fixture
async def store(prefix: str) -> AsyncIterator[SqlStore]:
    async with SqlStore(POSTGRES_URL, table_prefix=prefix, chunk_bytes=1024) as s:
        yield s


class TwoSteps:
    """The store seen without its own ``create_then_get``: the generic write, then read."""

    def __init__(self, store: SqlStore) -> None:
        self._store = store
        self.get, self.put = store.get, store.put

    @property
    def capabilities(self) -> StoreCapabilities:
        return self._store.capabilities


@pytest.fixture(params=["one call", "two steps"])
def taking(request: pytest.FixtureRequest, store: SqlStore) -> Any:
    """``create_then_get`` as the store does it, or as the generic path does."""
    target: Any = store if request.param == "one call" else TwoSteps(store)

    async def take(key: Key, value: bytes, ttl: float = 30.0) -> tuple[int, Entry | None]:
        return await create_then_get(target, key, value, ttl=ttl, read=RECORD)

    return take


async def test_a_free_lease_is_taken_with_the_record_read(store: SqlStore, taking: Any) -> None:
    assert await taking(LEASE, b"a") == (1, None)  # no record yet
    await store.delete(LEASE)
    await store.put(RECORD, b"state")
    await store.put(RECORD, b"state 2")
    assert await taking(LEASE, b"b") == (1, Entry(b"state 2", 2))
    assert await store.get(LEASE) == Entry(b"b", 1)


async def test_a_held_lease_is_refused_and_nothing_is_written(store: SqlStore, taking: Any) -> None:
    await store.put(RECORD, b"state")
    await taking(LEASE, b"a")
    await store.put(LEASE, b"a", expected_version=1, ttl=30)  # renewed: version 2
    with pytest.raises(VersionConflict) as caught:
        await taking(LEASE, b"b")
    assert (caught.value.expected, caught.value.found) == (0, 2)
    assert await store.get(LEASE) == Entry(b"a", 2)


async def test_an_expired_lease_is_taken_again_at_version_one(store: SqlStore, taking: Any) -> None:
    await taking(LEASE, b"a", 0.05)
    await anyio.sleep(0.2)  # waits past the ttl; nothing is timed
    assert await taking(LEASE, b"b") == (1, None)
    assert await store.get(LEASE) == Entry(b"b", 1)


async def test_the_lease_fences_saves_until_it_is_released(store: SqlStore, taking: Any) -> None:
    await taking(LEASE, b"a")
    assert await store.put(RECORD, b"saved", fence=Fence(LEASE, b"a")) == 1
    with pytest.raises(LeaseLostError):
        await store.put(RECORD, b"not mine", fence=Fence(LEASE, b"b"))
    assert await store.put(RECORD, b"last", fence=Fence(LEASE, b"a", release=True)) == 2
    assert await store.get(LEASE) is None
    assert await taking(LEASE, b"b") == (1, Entry(b"last", 2))  # the next holder reads it
    with pytest.raises(LeaseLostError):  # the first holder is fenced off
        await store.put(RECORD, b"late", fence=Fence(LEASE, b"a"))


@pytest.mark.parametrize("size", [1023, 1024, 1025, 5000])
async def test_a_chunked_record_is_read_whole(store: SqlStore, taking: Any, size: int) -> None:
    value = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    await store.put(RECORD, value)
    assert await taking(LEASE, b"a") == (1, Entry(value, 1))


async def test_a_chunked_lease_value_is_written_then_read(store: SqlStore, taking: Any) -> None:
    await store.put(RECORD, b"state")
    big = b"h" * 3000  # over chunk_bytes: the store writes it, then reads (two steps)
    assert await taking(LEASE, big) == (1, Entry(b"state", 1))
    assert await store.get(LEASE) == Entry(big, 1)


async def test_the_lease_and_the_read_are_one_statement(store: SqlStore) -> None:
    await store.put(RECORD, b"x" * 3000)  # chunked: still one statement
    async with count_round_trips(store) as counter:
        assert await store.create_then_get(LEASE, b"a", ttl=30, read=RECORD) == (
            1,
            Entry(b"x" * 3000, 1),
        )
    assert counter.seen == ["SELECT"]
    async with count_round_trips(store) as counter:
        with pytest.raises(VersionConflict):
            await store.create_then_get(LEASE, b"b", ttl=30, read=RECORD)
    assert counter.seen == ["SELECT"]
    await store.delete(LEASE)
    async with count_round_trips(store) as counter:  # before issue 26's h-wake4
        await create_then_get(TwoSteps(store), LEASE, b"a", ttl=30, read=RECORD)
    assert counter.seen == ["INSERT", "SELECT"]


async def test_outside_read_committed_the_two_statements_are_sent(prefix: str) -> None:
    """A database whose default isolation is stricter gives the whole call one snapshot: the
    function writes nothing and the store sends the write, then the read."""
    settings = {"server_settings": {"default_transaction_isolation": "repeatable read"}}
    engine_options = {"connect_args": settings}
    async with SqlStore(POSTGRES_URL, table_prefix=prefix, engine_options=engine_options) as store:
        await store.put(RECORD, b"state")
        async with count_round_trips(store) as counter:
            found = await store.create_then_get(LEASE, b"a", ttl=30, read=RECORD)
        assert found == (1, Entry(b"state", 1))
        assert counter.seen == ["SELECT", "INSERT", "SELECT"]
        with pytest.raises(VersionConflict):
            await store.create_then_get(LEASE, b"b", ttl=30, read=RECORD)


async def test_an_old_database_gets_the_function_by_migration(prefix: str) -> None:
    async with SqlStore(POSTGRES_URL, table_prefix=prefix) as store:
        schema = store._t.schema
        async with store._engine.begin() as conn:  # as a database migrated before version 3
            await conn.execute(delete(schema).where(schema.c.version == 3))
            await conn.execute(text(f"DROP FUNCTION {prefix}create_then_get"))
    assert LATEST == 3
    async with SqlStore(POSTGRES_URL, table_prefix=prefix) as store:
        await store.put(RECORD, b"state")
        async with count_round_trips(store) as counter:
            found = await store.create_then_get(LEASE, b"a", ttl=30, read=RECORD)
        assert found == (1, Entry(b"state", 1)) and counter.seen == ["SELECT"]


def _holder(url: str, prefix: str, turns: int, barrier: Any, results: Any) -> None:
    """Take the lease ``turns`` times; each time add one to the counter the record holds, saved
    with the version read and the lease as fence, releasing it. A read older than the previous
    holder's last save makes that save fail (a version conflict)."""

    async def main() -> None:
        token = uuid.uuid4().hex.encode()
        async with SqlStore(url, table_prefix=prefix) as store:
            await anyio.to_thread.run_sync(barrier.wait, 60)
            for _ in range(turns):
                while True:
                    try:
                        _, read = await store.create_then_get(LEASE, token, ttl=60, read=RECORD)
                        break
                    except VersionConflict:
                        await anyio.lowlevel.checkpoint()
                n = 0 if read is None else int(read.value)
                expected = 0 if read is None else read.version
                fence = Fence(LEASE, token, release=True)
                await store.put(RECORD, str(n + 1).encode(), expected_version=expected, fence=fence)

    try:
        anyio.run(main)
    except BaseException as e:
        results.put(repr(e))
    else:
        results.put("ok")


@pytest.mark.slow
async def test_a_new_holder_reads_the_previous_holders_last_save(store: SqlStore) -> None:
    """Processes take the lease in turn as fast as they can (each waiting one's insert blocks on
    the releasing transaction): every holder reads the record as the previous one saved it."""
    ctx = multiprocessing.get_context("spawn")
    procs_n, turns = 3, 40
    barrier, results = ctx.Barrier(procs_n), ctx.Queue()
    args = (POSTGRES_URL, store.table_prefix, turns, barrier, results)
    procs = [ctx.Process(target=_holder, args=args) for _ in range(procs_n)]
    for p in procs:
        p.start()
    outcomes = [await anyio.to_thread.run_sync(results.get, True, 120) for _ in procs]
    for p in procs:
        p.join(10)
    assert outcomes == ["ok"] * procs_n
    assert await store.get(RECORD) == Entry(str(procs_n * turns).encode(), procs_n * turns)
