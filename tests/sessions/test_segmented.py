"""Segmented session records (Redis, Redis Cluster): a save sends what changed, a load parses only
segments the process has not seen, and every guarantee of the whole-value record still holds."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from agentscope_teams import AgentState, AssistantMsg, UserMsg
from agentscope_teams.errors import LeaseLostError, SchemaVersionError, VersionConflict
from agentscope_teams.keys import SessionAddress
from agentscope_teams.message import Msg
from agentscope_teams.sessions import SessionStorage
from agentscope_teams.sessions.origins import origin_of
from agentscope_teams.sessions.records import (
    HEAD_MARK,
    VERSIONED_PARTS,
    SegmentedHead,
    SessionBody,
    new_body,
)
from agentscope_teams.sessions.segments import SEGMENT_BYTES, SegmentCache, field_of
from agentscope_teams.state import raise_if_newer
from agentscope_teams.store import StoreBackend
from agentscope_teams.store.base import Entry, Fence, Key

from ..backends import REDIS_BACKENDS, StoreSpec

each_redis = pytest.mark.parametrize("store_spec", REDIS_BACKENDS, indirect=True)


def _segment_fields(entry: Entry | None) -> list[str]:
    assert entry is not None
    return [field_of(sid) for sid, _ in SegmentedHead.model_validate_json(entry.value).segments]


def _context(n: int) -> list[Msg]:
    return [
        (UserMsg if i % 2 == 0 else AssistantMsg)(f"message {i}: " + "words of the turn " * 30)
        for i in range(n)
    ]


class CountingStore:
    """The store, counting the bytes each ``put_fields`` sends (value and fields)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.sent: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def get_fields(self, key: Key, fields: Sequence[str]) -> list[bytes | None]:
        found: list[bytes | None] = await self._store.get_fields(key, fields)
        return found

    async def put_fields(self, key: Key, value: bytes, **kw: Any) -> int:
        self.sent.append(len(value) + sum(len(name) + len(data) for name, data in kw["fields"]))
        version: int = await self._store.put_fields(key, value, **kw)
        return version


async def _session(storage: SessionStorage, ns: str, n: int) -> SessionAddress:
    addr = SessionAddress(None, ns, "agent", "s")
    await storage.create_at(addr, state=AgentState(context=_context(n)))
    return addr


async def _segmented(storage: SessionStorage, ns: str, n: int) -> SessionAddress:
    """A session of ``n`` messages, rewritten once (created whole, every rewrite is segmented)."""
    addr = await _session(storage, ns, n)
    record = await storage.get_at(addr)
    assert record is not None
    await storage.update_at(addr, record.state, expected_version=record.version)
    return addr


async def _cold(store: StoreBackend, addr: SessionAddress) -> list[Msg]:
    """The context as a process with nothing cached reads it."""
    record = await SessionStorage(store, segment_cache=SegmentCache()).get_at(addr)
    assert record is not None
    return record.state.context


@each_redis
async def test_a_record_written_whole_loads_and_becomes_segmented(
    store: StoreBackend, ns: str
) -> None:
    addr = SessionAddress(None, ns, "agent", "old")
    body = new_body(None, AgentState(session_id="old", context=_context(5)), origin_of())
    # exactly what the previous layout wrote: the whole body as the value
    await store.put(addr.key, body.model_dump_json().encode(), expected_version=0)
    storage = SessionStorage(store, segment_cache=SegmentCache())
    record = await storage.get_at(addr)
    assert record is not None and record.state.context == body.state.context
    record.state.context.append(UserMsg("and one more"))
    version = await storage.update_at(addr, record.state, expected_version=record.version)
    entry = await store.get(addr.key)
    assert entry is not None and entry.version == version and entry.value.startswith(HEAD_MARK)
    assert await _cold(store, addr) == record.state.context
    assert len(record.state.context) == 6


@each_redis
async def test_a_save_of_one_message_sends_that_message_not_the_session(
    store: StoreBackend, ns: str
) -> None:
    counting = CountingStore(store)
    storage = SessionStorage(counting, segment_cache=SegmentCache())
    sent = {}
    for n in (10, 1000):
        addr = await _session(storage, f"{ns}-{n}", n)
        record = await storage.get_at(addr)
        assert record is not None
        await storage.update_at(addr, record.state)  # the first rewrite segments it
        new = UserMsg("one new question " * 10)
        record.state.context.append(new)
        await storage.update_at(addr, record.state)
        sent[n] = counting.sent[-1]
        assert await _cold(store, addr) == record.state.context
    new_bytes = len(new.model_dump_json())
    # the new message, the reopened last segment (under SEGMENT_BYTES) and the head: not 700 KB
    assert sent[1000] < new_bytes + SEGMENT_BYTES + 4096
    assert sent[1000] < sent[10] + SEGMENT_BYTES


@each_redis
async def test_rewritten_history_compacts_the_segments(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store, segment_cache=SegmentCache())
    addr = await _session(storage, ns, 300)
    record = await storage.get_at(addr)
    assert record is not None
    await storage.update_at(addr, record.state)
    before = _segment_fields(await store.get(addr.key))
    assert len(before) > 5
    state = record.state
    state.context[:295] = [UserMsg("summary of the first 295 messages")]  # compression
    await storage.update_at(addr, state)
    assert await _cold(store, addr) == state.context
    after = _segment_fields(await store.get(addr.key))
    assert len(after) == 1 and after[0] not in before
    # the replaced segments were deleted with the write
    assert await store.get_fields(addr.key, before) == [None] * len(before)  # type: ignore[attr-defined]


@each_redis
async def test_a_message_cannot_change_under_its_cached_encoding(
    store: StoreBackend, ns: str
) -> None:
    storage = SessionStorage(store)
    addr = await _segmented(storage, ns, 4)
    record = await storage.get_at(addr)
    assert record is not None
    msg = record.state.context[1]
    with pytest.raises(TypeError, match="with_metadata"):
        msg.metadata["edited"] = True
    with pytest.raises(ValueError, match="frozen"):
        msg.content = "edited"  # type: ignore[misc]
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="with_output"):
        msg.set_output({"a": 1}, {"a": 1})
    # the way to change it: a new message in its place, which the next save sends
    record.state.context[1] = msg.with_metadata(edited=True)
    await storage.update_at(addr, record.state)
    again = await storage.get_at(addr)
    assert again is not None and again.state.context[1].metadata["edited"] is True
    assert (await _cold(store, addr))[1].metadata["edited"] is True


@each_redis
async def test_the_cache_stays_within_its_bound(store: StoreBackend, ns: str) -> None:
    cache = SegmentCache(max_bytes=3 * SEGMENT_BYTES)
    storage = SessionStorage(store, segment_cache=cache)
    addrs = [await _session(storage, f"{ns}-{i}", 120) for i in range(3)]
    for addr in addrs:  # each rewrite segments ~100 KB of context
        record = await storage.get_at(addr)
        assert record is not None
        await storage.update_at(addr, record.state)
        assert cache.bytes <= cache.max_bytes
    for addr in addrs:
        loaded = await storage.get_at(addr)
        assert loaded is not None and loaded.state.context == await _cold(store, addr)
        assert cache.bytes <= cache.max_bytes
    assert len(cache) > 0


@each_redis
async def test_a_lost_fence_writes_no_segment(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    addr = await _session(storage, ns, 3)
    lease = (*addr.key[:-1], "lease-of-s")
    await store.put(lease, b"holder-2")
    record = await storage.get_at(addr)
    assert record is not None
    record.state.context.append(UserMsg("after the takeover"))
    with pytest.raises(LeaseLostError):
        await storage.update_at(
            addr, record.state, expected_version=record.version, fence=Fence(lease, b"holder-1")
        )
    assert len(await _cold(store, addr)) == 3
    version = await storage.update_at(
        addr, record.state, expected_version=record.version, fence=Fence(lease, b"holder-2")
    )
    assert version == record.version + 1 and len(await _cold(store, addr)) == 4
    await store.delete(lease)


def _save_at(spec: StoreSpec, ns: str, version: int, text: str, results: Any) -> None:
    async def main() -> None:
        async with spec.open() as store:
            storage = SessionStorage(store)
            addr = SessionAddress(None, ns, "agent", "s")
            record = await storage.get_at(addr)
            assert record is not None
            record.state.context.append(UserMsg(text))
            try:
                await storage.update_at(addr, record.state, expected_version=version)
                results.put(("won", text))
            except VersionConflict:
                results.put(("lost", text))

    anyio.run(main)


@each_redis
async def test_concurrent_saves_across_processes_conflict(
    store_spec: StoreSpec, store: StoreBackend, ns: str
) -> None:
    storage = SessionStorage(store)
    addr = await _session(storage, ns, 40)
    record = await storage.get_at(addr)
    assert record is not None
    version = await storage.update_at(addr, record.state)  # segmented from here
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_save_at, args=(store_spec, ns, version, f"writer {i}", results))
        for i in range(3)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    outcomes = sorted(results.get(timeout=5) for _ in procs)
    assert [o for o, _ in outcomes] == ["lost", "lost", "won"]
    [winner] = [text for outcome, text in outcomes if outcome == "won"]
    context = await _cold(store, addr)
    assert len(context) == 41 and context[-1].get_text_content() == winner
    stale = await storage.get_at(addr)  # this process's cached segments still read true
    assert stale is not None and stale.state.context == context
    assert stale.version == version + 1


@each_redis
async def test_a_body_field_change_keeps_the_context(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    addr = await _session(storage, ns, 20)
    await storage.set_session_team_id(ns, "s", "team-1", agent_id="agent")
    record = await storage.get_at(addr)
    assert record is not None and record.team_id == "team-1"
    assert len(record.state.context) == 20
    assert await _cold(store, addr) == record.state.context


@each_redis
async def test_schema_versions_of_the_head(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    addr = await _segmented(storage, ns, 3)
    entry = await store.get(addr.key)
    assert entry is not None
    # what a reader from before segments does with the head: it says "upgrade", not "empty history"
    with pytest.raises(ValidationError):
        SessionBody.model_validate_json(entry.value)
    with pytest.raises(SchemaVersionError, match="upgrade"):
        raise_if_newer(entry.value, VERSIONED_PARTS)
    # a head from a newer agentscope-teams: this one says "upgrade" too
    newer = entry.value.replace(b'"schema_version":3', b'"schema_version":4', 1)
    await store.put(addr.key, newer, expected_version=entry.version)
    with pytest.raises(SchemaVersionError, match="upgrade"):
        await SessionStorage(store).get_at(addr)


@each_redis
async def test_a_load_racing_a_compaction_reads_the_new_record(
    store: StoreBackend, ns: str
) -> None:
    writer = SessionStorage(store)
    addr = await _segmented(writer, ns, 200)
    stale = await store.get(addr.key)  # a reader got the head, then the writer compacted
    record = await writer.get_at(addr)
    assert record is not None and stale is not None
    record.state.context[:190] = [UserMsg("summary")]
    await writer.update_at(addr, record.state)
    reader = SessionStorage(store, segment_cache=SegmentCache())
    loaded = await reader._read(addr.key, stale)  # its segments are gone: it starts again
    assert loaded is not None and loaded[1].state.context == record.state.context
    assert loaded[0] == record.version + 1


@each_redis
async def test_a_save_over_a_recreated_session_never_lists_a_missing_segment(
    store: StoreBackend, ns: str
) -> None:
    stale = SessionStorage(store)  # a process that wrote the session before it was deleted
    addr = await _segmented(stale, ns, 60)
    record = await stale.get_at(addr)
    assert record is not None and record.version == 2
    other = SessionStorage(store)  # another process deletes it and starts it again: versions
    assert await other.delete_at(addr)  # go on from the tombstone, with other segments
    await other.create_at(addr, state=AgentState(context=[UserMsg("a new conversation")]))
    again = await other.get_at(addr)
    assert again is not None and again.version > 2
    again.state.context.append(AssistantMsg("hello again"))
    new = await other.update_at(addr, again.state, expected_version=again.version)
    assert new == again.version + 1
    # the first process saves its state at the version it remembers (the seed's update)
    record.state.context.append(UserMsg("one more"))
    version = await stale.update_at(addr, record.state)
    assert await _cold(store, addr) == record.state.context
    loaded = await SessionStorage(store).get_at(addr)
    assert loaded is not None and loaded.version == version
