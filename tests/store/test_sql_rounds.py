"""The PostgreSQL store's operations sent as one statement on the driver's connection
(:mod:`agentscope_teams.store.sql.pg_statements`): ``get_many_and_read`` returns what
``get_many`` and ``read`` return (chunked values, expired and missing keys, repeated keys and
streams), in one statement; a versioned ``put`` of an inline value is one statement, and its
conflicts and expiry are those of the SQLAlchemy path."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from agentscope_teams.errors import VersionConflict
from agentscope_teams.store import Key
from agentscope_teams.store.sql import SqlStore, pg_statements
from agentscope_teams.store.sql import reads as sql_reads
from agentscope_teams.store.sql.database import Retry

from ..backends import POSTGRES_URL
from ..conftest import require_service
from ..teams.round_trips import count_round_trips
from .sql_tables import drop_store_tables

pytestmark = pytest.mark.anyio

A: Key = ("t", "s", "a", "1")
BIG: Key = ("t", "s", "a", "2")
GONE: Key = ("t", "s", "a", "3")
NONE: Key = ("t", "s", "a", "4")
LOG: Key = ("t", "s", "log")
EMPTY: Key = ("t", "s", "none")


@pytest.fixture
async def store() -> AsyncIterator[SqlStore]:
    """A store on fresh tables (chunks of 1 KiB); the tables are dropped afterwards."""
    require_service("postgres")
    prefix = f"r{uuid.uuid4().hex[:8]}_"
    async with SqlStore(POSTGRES_URL, table_prefix=prefix, chunk_bytes=1024) as s:
        yield s
    await drop_store_tables(POSTGRES_URL, prefix)


async def _filled(store: SqlStore) -> None:
    await store.put(A, b"va")
    await store.put(A, b"va2", expected_version=1)
    await store.put(BIG, bytes(range(256)) * 9)  # 2304 bytes: three chunks
    await store.put(GONE, b"gone", ttl=0.05)
    for i in range(6):
        await store.append(LOG, b"e%d" % i if i != 3 else b"x" * 2500)  # seq 4 is chunked
    await anyio.sleep(0.1)  # GONE expired


PAGES = [(LOG, 1, 2), (LOG, 2, 10), (EMPTY, 0, 10), (LOG, 0, 1)]


async def test_entries_and_stream_pages_read_together_as_apart(store: SqlStore) -> None:
    await _filled(store)
    keys = [A, BIG, GONE, NONE, A]
    async with count_round_trips(store) as counter:
        entries, pages = await store.get_many_and_read(keys, PAGES)
    assert counter.count == 1 and counter.on_driver == {0}, counter.statements
    assert entries == await store.get_many(keys)
    assert pages == [await store.read(s, after=n, limit=m) for s, n, m in PAGES]
    assert [e.version if e else None for e in entries] == [2, 1, None, None, 2]
    assert pages[1][1] == (4, b"x" * 2500) and [s for s, _ in pages[1]] == [3, 4, 5, 6]
    assert pages[2] == [] and pages[3] == [(1, b"e0")]
    assert await store.get_many_and_read([], []) == ([], [])
    with pytest.raises(ValueError):
        await store.get_many_and_read([A], [(LOG, -1, 10)])


async def test_more_keys_than_one_statement_holds_are_read_apart(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More keys than one ``get_many`` chunk: ``get_many``, then each page, as without the
    capability (here a chunk of 2 keys: two ``SELECT ... IN``, one read per page and the
    chunks of the chunked entry the second page holds), none on the driver's connection."""
    await _filled(store)
    monkeypatch.setattr(sql_reads, "CHUNK", 2)
    keys = [A, BIG, GONE]
    async with count_round_trips(store) as counter:
        entries, pages = await store.get_many_and_read(keys, PAGES[:2])
    assert counter.count == 5 and not counter.on_driver, counter.statements
    monkeypatch.undo()
    assert (entries, pages) == await store.get_many_and_read(keys, PAGES[:2])


async def test_a_versioned_put_is_one_statement_with_the_same_conflicts(store: SqlStore) -> None:
    await store.put(A, b"v1")
    async with count_round_trips(store) as counter:
        assert await store.put(A, b"v2", expected_version=1) == 2
    assert counter.count == 1 and counter.on_driver == {0}, counter.statements
    async with count_round_trips(store) as counter:
        with pytest.raises(VersionConflict) as stale:
            await store.put(A, b"v3", expected_version=1)
    assert (stale.value.expected, stale.value.found) == (1, 2)
    assert counter.count == 2 and counter.on_driver == {0, 1}  # the update, the version read
    with pytest.raises(VersionConflict) as missing:
        await store.put(NONE, b"v", expected_version=1)
    assert missing.value.found == 0
    entry = await store.get(A)
    assert entry is not None and (entry.value, entry.version) == (b"v2", 2)
    # a ttl given expires the entry; none given clears an earlier one
    assert await store.put(A, b"v3", expected_version=2, ttl=0.05) == 3
    await store.put(BIG, b"b", ttl=30.0)
    assert await store.put(BIG, b"b2", expected_version=1) == 2
    await anyio.sleep(0.1)
    assert await store.get(A) is None
    with pytest.raises(VersionConflict) as expired:
        await store.put(A, b"v4", expected_version=3)
    assert expired.value.found == 0
    big = await store.get(BIG)
    assert big is not None and big.value == b"b2"


async def test_a_versioned_put_over_a_chunked_value_reads_back_inline(store: SqlStore) -> None:
    """A chunked value rewritten inline (the driver's statement) reads back as the new value,
    and a value over ``chunk_bytes`` still goes the SQLAlchemy way (its chunks written)."""
    await store.put(BIG, b"c" * 3000)
    assert await store.put(BIG, b"small", expected_version=1) == 2
    entry = await store.get(BIG)
    assert entry is not None and (entry.value, entry.version) == (b"small", 2)
    async with count_round_trips(store) as counter:
        assert await store.put(BIG, b"d" * 3000, expected_version=2) == 3
    assert not counter.on_driver
    entry = await store.get(BIG)
    assert entry is not None and entry.value == b"d" * 3000


async def test_a_round_read_whose_chunks_tore_is_read_again(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows whose chunks a concurrent write tore (``Retry`` from their decoding, as ``get_many``
    raises it) are read again by the store's retry loop, not handed to the caller."""
    await _filled(store)
    decoded: list[int] = []
    real = pg_statements.round_of

    def torn_once(rows: Any, hs: Any, npages: int) -> Any:
        decoded.append(len(rows))
        if len(decoded) == 1:
            raise Retry
        return real(rows, hs, npages)

    monkeypatch.setattr(pg_statements, "round_of", torn_once)
    async with count_round_trips(store) as counter:
        got = await store.get_many_and_read([BIG], [(LOG, 0, 10)])
    assert counter.count == 2 and len(decoded) == 2
    assert got == (await store.get_many([BIG]), [await store.read(LOG)])
