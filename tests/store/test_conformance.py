"""The store conformance suite: single-process semantics every backend shares.

Parametrized over every backend by the ``store`` / ``store_spec`` fixtures (``tests/conftest.py``).
Every key and stream starts with the test's ``ns`` segment, so tests sharing a server never see each
other's data. Multi-process behaviour lives in ``test_contention.py``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from itertools import pairwise

import anyio
import pytest

from agentscope_teams.errors import ValueTooLargeError, VersionConflict
from agentscope_teams.store import Entry, Key, StoreBackend, encode_key, store_from_url

from ..backends import StoreSpec

TTL = 0.5
#: How long we keep polling for an expired key. Generous on purpose: we never assert how fast a
#: backend expires entries, only that it eventually does.
EXPIRY_DEADLINE = 20.0


def by_encoding(keys: list[Key]) -> list[Key]:
    return sorted(keys, key=encode_key)


async def wait_until_absent(store: StoreBackend, key: Key) -> None:
    deadline = anyio.current_time() + EXPIRY_DEADLINE
    while await store.get(key) is not None:
        if anyio.current_time() > deadline:
            pytest.fail(f"{key!r} written with ttl={TTL} is still present after {EXPIRY_DEADLINE}s")
        await anyio.sleep(0.05)


async def list_all(store: StoreBackend, prefix: Key, page: int = 100) -> list[Key]:
    out: list[Key] = []
    after: Key | None = None
    while True:
        batch = await store.list_keys(prefix, limit=page, after=after)
        assert len(batch) <= page
        out.extend(batch)
        if len(batch) < page:
            return out
        after = batch[-1]


# --------------------------------------------------------------------------- get / put / versions


async def test_get_absent_returns_none(store: StoreBackend, ns: str) -> None:
    assert await store.get((ns, "missing")) is None


async def test_put_counts_versions_from_one(store: StoreBackend, ns: str) -> None:
    key = (ns, "doc")
    assert await store.put(key, b"one") == 1
    assert await store.get(key) == Entry(b"one", 1)
    assert await store.put(key, b"two") == 2
    assert await store.get(key) == Entry(b"two", 2)
    assert await store.put(key, b"three") == 3
    assert await store.get(key) == Entry(b"three", 3)


async def test_keys_hold_separate_values_and_versions(store: StoreBackend, ns: str) -> None:
    await store.put((ns, "a"), b"A")
    await store.put((ns, "b"), b"B1")
    await store.put((ns, "b"), b"B2")
    assert await store.get((ns, "a")) == Entry(b"A", 1)
    assert await store.get((ns, "b")) == Entry(b"B2", 2)


# --------------------------------------------------------------------------- compare-and-set


async def test_create_only_succeeds_once(store: StoreBackend, ns: str) -> None:
    key = (ns, "lock")
    assert await store.put(key, b"first", expected_version=0) == 1
    with pytest.raises(VersionConflict) as info:
        await store.put(key, b"second", expected_version=0)
    assert info.value.key == key
    assert info.value.expected == 0
    assert info.value.found == 1
    assert await store.get(key) == Entry(b"first", 1)


async def test_stale_version_is_rejected_and_writes_nothing(store: StoreBackend, ns: str) -> None:
    key = (ns, "doc")
    await store.put(key, b"one")
    await store.put(key, b"two")
    with pytest.raises(VersionConflict) as info:
        await store.put(key, b"lost update", expected_version=1)
    assert (info.value.key, info.value.expected, info.value.found) == (key, 1, 2)
    assert await store.get(key) == Entry(b"two", 2)


async def test_matching_version_succeeds(store: StoreBackend, ns: str) -> None:
    key = (ns, "doc")
    await store.put(key, b"one")
    assert await store.put(key, b"two", expected_version=1) == 2
    assert await store.put(key, b"three", expected_version=2) == 3
    assert await store.get(key) == Entry(b"three", 3)


async def test_expected_version_on_absent_key_conflicts(store: StoreBackend, ns: str) -> None:
    key = (ns, "never-written")
    with pytest.raises(VersionConflict) as info:
        await store.put(key, b"x", expected_version=1)
    assert info.value.key == key
    assert info.value.expected == 1
    assert info.value.found in (0, None)
    assert await store.get(key) is None


async def test_delete_with_wrong_version_keeps_value(store: StoreBackend, ns: str) -> None:
    key = (ns, "doc")
    await store.put(key, b"one")
    await store.put(key, b"two")
    with pytest.raises(VersionConflict) as info:
        await store.delete(key, expected_version=1)
    assert (info.value.key, info.value.expected, info.value.found) == (key, 1, 2)
    assert await store.get(key) == Entry(b"two", 2)


async def test_delete_with_right_version_deletes(store: StoreBackend, ns: str) -> None:
    key = (ns, "doc")
    await store.put(key, b"one")
    await store.put(key, b"two")
    assert await store.delete(key, expected_version=2) is True
    assert await store.get(key) is None
    assert await store.list_keys((ns,)) == []


async def test_unconditional_delete_then_delete_absent(store: StoreBackend, ns: str) -> None:
    key = (ns, "doc")
    await store.put(key, b"v")
    assert await store.delete(key) is True
    assert await store.get(key) is None
    assert await store.delete(key) is False
    assert await store.delete((ns, "never-written")) is False


async def test_recreate_after_delete_restarts_at_version_one(store: StoreBackend, ns: str) -> None:
    key = (ns, "doc")
    await store.put(key, b"one")
    await store.put(key, b"two")
    await store.delete(key)
    assert await store.put(key, b"again", expected_version=0) == 1
    assert await store.get(key) == Entry(b"again", 1)
    with pytest.raises(VersionConflict):
        await store.put(key, b"stale", expected_version=2)
    assert await store.get(key) == Entry(b"again", 1)


# --------------------------------------------------------------------------- ttl


async def test_ttl_entry_is_present_then_expires(store: StoreBackend, ns: str) -> None:
    key = (ns, "lease")
    assert await store.put(key, b"held", ttl=TTL) == 1
    assert await store.get(key) == Entry(b"held", 1)
    await wait_until_absent(store, key)
    assert await store.get(key) is None


async def test_expired_key_is_absent_for_cas_delete_and_listing(
    store: StoreBackend, ns: str
) -> None:
    # The keys written first expire no later than ``probe``; once ``probe`` is gone they are expired
    # too, and we check them without a get() that could have cleaned them up as a side effect.
    for_delete, for_cas, for_conflict, probe = (
        (ns, "ttl", "del"),
        (ns, "ttl", "cas"),
        (ns, "ttl", "conflict"),
        (ns, "ttl", "probe"),
    )
    keep = (ns, "ttl", "keep")
    await store.put(for_cas, b"old", ttl=TTL)
    await store.put(for_cas, b"old2", ttl=TTL)  # version 2 before it expires
    for key in (for_delete, for_conflict, probe):
        await store.put(key, b"old", ttl=TTL)
    await store.put(keep, b"kept")
    await wait_until_absent(store, probe)

    assert await store.list_keys((ns, "ttl")) == [keep]
    assert await store.list_keys((ns,)) == [keep]
    assert await store.delete(for_delete) is False
    with pytest.raises(VersionConflict) as info:
        await store.put(for_conflict, b"new", expected_version=1)
    assert info.value.found in (0, None)
    assert await store.put(for_cas, b"new", expected_version=0) == 1
    assert await store.get(for_cas) == Entry(b"new", 1)
    assert await store.get(keep) == Entry(b"kept", 1)


async def test_get_many_reads_like_get_in_order(store: StoreBackend, ns: str) -> None:
    a, b, gone, absent = (ns, "m", "a"), (ns, "m", "b"), (ns, "m", "gone"), (ns, "m", "absent")
    await store.put(a, b"one")
    await store.put(b, b"two")
    await store.put(b, b"two again")
    await store.put(gone, b"x")
    await store.delete(gone)
    keys = [b, absent, a, gone, b]  # any order, repeats and absent keys allowed
    assert await store.get_many(keys) == [await store.get(k) for k in keys]
    two, one = Entry(b"two again", 2), Entry(b"one", 1)
    assert await store.get_many(keys) == [two, None, one, None, two]
    assert await store.get_many([]) == []


async def test_get_many_of_a_large_batch(store: StoreBackend, ns: str) -> None:
    keys = [(ns, "batch", f"k{i:04d}") for i in range(1200)]  # over one SQL chunk
    for i, key in enumerate(keys[::3]):
        await store.put(key, str(i).encode())
    found = await store.get_many(keys)
    assert [e.value if e else None for e in found] == [
        str(i // 3).encode() if i % 3 == 0 else None for i in range(len(keys))
    ]


async def test_get_many_chunked_value_and_expired_entry(store: StoreBackend, ns: str) -> None:
    big, short = (ns, "gm", "big"), (ns, "gm", "short")
    data = os.urandom((1 << 20) + 17)  # over the SQL chunk size: stored in parts
    await store.put(big, data)
    await store.put(short, b"soon gone", ttl=TTL)
    await wait_until_absent(store, short)
    assert await store.get_many([short, big]) == [None, Entry(data, 1)]


async def test_get_many_rejects_invalid_keys(store: StoreBackend, ns: str) -> None:
    with pytest.raises(ValueError):
        await store.get_many([(ns, "ok"), (ns, "")])


async def test_rewrite_replaces_the_ttl(store: StoreBackend, ns: str) -> None:
    renewed, made_permanent, probe = (ns, "renewed"), (ns, "permanent"), (ns, "probe")
    await store.put(renewed, b"v1", ttl=TTL)
    await store.put(made_permanent, b"v1", ttl=TTL)
    assert await store.put(renewed, b"v2", ttl=600) == 2
    assert await store.put(made_permanent, b"v2", expected_version=1) == 2
    # ``probe`` is written after both rewrites with the original ttl: once it has expired, the
    # original ttl of the other two has passed as well.
    await store.put(probe, b"p", ttl=TTL)
    await wait_until_absent(store, probe)
    assert await store.get(renewed) == Entry(b"v2", 2)
    assert await store.get(made_permanent) == Entry(b"v2", 2)


async def test_non_positive_ttl_is_rejected(store: StoreBackend, ns: str) -> None:
    for ttl in (0, -1.0):
        with pytest.raises(ValueError, match="ttl"):
            await store.put((ns, "k"), b"v", ttl=ttl)
    assert await store.get((ns, "k")) is None


# --------------------------------------------------------------------------- list_keys


async def test_list_keys_prefix_is_segment_wise(store: StoreBackend, ns: str) -> None:
    keys = [
        (ns, "a", "b"),
        (ns, "a", "b", "x"),
        (ns, "a", "b", "y", "z"),
        (ns, "a", "bc"),
        (ns, "a", "bc", "x"),
        (ns, "ab"),
        (ns, "ab", "x"),
    ]
    for key in keys:
        await store.put(key, b"v")
    # Keys that extend the prefix by at least one segment; the prefix itself is not listed.
    assert await store.list_keys((ns, "a", "b")) == [(ns, "a", "b", "x"), (ns, "a", "b", "y", "z")]
    assert await store.list_keys((ns, "a", "bc")) == [(ns, "a", "bc", "x")]
    assert await store.list_keys((ns, "ab")) == [(ns, "ab", "x")]
    assert await store.list_keys((ns, "a")) == by_encoding(keys[:5])
    assert await store.list_keys((ns,)) == by_encoding(keys)


async def test_list_keys_orders_by_encoded_bytes(store: StoreBackend, ns: str) -> None:
    # Mixed depths and characters that sort differently under case-insensitive, locale or
    # pad-space collations: byte order of the encodings is the only accepted order.
    segments = ["a", "A", "B", "b", "a ", "a b", "a-b", "a.b", "a0", "a_b", "ab", "Z", "z", "~"]
    segments += ["é", "e\u0301", "ä", "日本", "😀", "0", "10", "9", "a%b", "a/b", "a:b"]
    keys: list[Key] = [(ns, s) for s in segments]
    keys += [(ns, "a", "b"), (ns, "a", "B"), (ns, "a", "b", "c"), (ns, "a b", "c")]
    for i, key in enumerate(keys):
        await store.put(key, str(i).encode())
    listed = await store.list_keys((ns,))
    assert listed == by_encoding(keys)
    for i, key in enumerate(keys):
        assert await store.get(key) == Entry(str(i).encode(), 1), key


async def test_list_keys_pages_with_cursor(store: StoreBackend, ns: str) -> None:
    keys: list[Key] = []
    for i in range(200):
        keys.append((ns, "p", f"{(i * 7919) % 1000:03d}-{i}"))
    for i in range(0, 200, 4):
        keys.append((ns, "p", f"{(i * 7919) % 1000:03d}-{i}", "child"))
    assert len(keys) == 250
    for key in keys:
        await store.put(key, b"v")

    pages: list[list[Key]] = []
    after: Key | None = None
    while True:
        page = await store.list_keys((ns, "p"), limit=100, after=after)
        pages.append(page)
        if not page:
            break
        after = page[-1]
    assert [len(p) for p in pages] == [100, 100, 50, 0]
    listed = [k for p in pages for k in p]
    assert listed == by_encoding(keys)
    assert len(set(listed)) == 250


async def test_list_keys_limit_returns_the_first_keys(store: StoreBackend, ns: str) -> None:
    keys = [(ns, c) for c in "edcba"]
    for key in keys:
        await store.put(key, b"v")
    assert await store.list_keys((ns,), limit=1) == [(ns, "a")]
    assert await store.list_keys((ns,), limit=3, after=(ns, "a")) == [
        (ns, "b"),
        (ns, "c"),
        (ns, "d"),
    ]
    assert await store.list_keys((ns,), after=(ns, "e")) == []


async def test_list_keys_cursor_may_name_a_deleted_key(store: StoreBackend, ns: str) -> None:
    for c in "abcde":
        await store.put((ns, c), b"v")
    first = await store.list_keys((ns,), limit=2)
    assert first == [(ns, "a"), (ns, "b")]
    await store.delete((ns, "b"))
    assert await store.list_keys((ns,), after=first[-1]) == [(ns, "c"), (ns, "d"), (ns, "e")]


async def test_list_keys_unknown_prefix_is_empty(store: StoreBackend, ns: str) -> None:
    await store.put((ns, "x", "y"), b"v")
    assert await store.list_keys((ns, "nope")) == []
    assert await store.list_keys((ns, "x", "y")) == []
    assert await store.list_keys((ns, "x", "y", "z")) == []
    assert await store.list_keys((ns + "-other",)) == []


async def test_list_keys_prefix_is_not_a_pattern(store: StoreBackend, ns: str) -> None:
    # Segments that are wildcards in SQL LIKE, Redis glob patterns or case-insensitive collations.
    segments = ["x", "a25", "a", "A", "_", "%", "*", "?", "[a]", "\\", "a%25", "%25"]
    for s in segments:
        await store.put((ns, s, "k"), s.encode())
    for s in segments:
        assert await store.list_keys((ns, s)) == [(ns, s, "k")], f"prefix {(ns, s)!r}"
    assert await store.list_keys((ns,)) == by_encoding([(ns, s, "k") for s in segments])


# --------------------------------------------------------------------------- streams


async def test_append_allocates_increasing_seqs(store: StoreBackend, ns: str) -> None:
    stream = (ns, "events")
    values = [f"event-{i}".encode() for i in range(10)]
    seqs = [await store.append(stream, v) for v in values]
    assert all(b > a for a, b in pairwise(seqs)), seqs
    assert seqs[0] > 0
    assert await store.read(stream) == list(zip(seqs, values, strict=True))


async def test_read_after_and_limit(store: StoreBackend, ns: str) -> None:
    stream = (ns, "events")
    values = [f"event-{i}".encode() for i in range(30)]
    entries = [(await store.append(stream, v), v) for v in values]
    assert await store.read(stream, after=0, limit=3) == entries[:3]
    assert await store.read(stream, after=entries[9][0], limit=5) == entries[10:15]
    assert await store.read(stream, after=entries[9][0]) == entries[10:]
    assert await store.read(stream, after=entries[-2][0], limit=5) == entries[-1:]
    assert await store.read(stream, after=entries[-1][0]) == []


async def test_read_pages_through_a_long_stream(store: StoreBackend, ns: str) -> None:
    stream = (ns, "long")
    expected = [(await store.append(stream, f"{i}".encode()), f"{i}".encode()) for i in range(250)]
    got: list[tuple[int, bytes]] = []
    after = 0
    while True:
        page = await store.read(stream, after=after, limit=100)
        assert len(page) <= 100
        if not page:
            break
        got.extend(page)
        after = page[-1][0]
    assert got == expected


async def test_read_absent_stream_is_empty(store: StoreBackend, ns: str) -> None:
    assert await store.read((ns, "nothing")) == []
    assert await store.read((ns, "nothing"), after=5, limit=1) == []


async def test_streams_are_independent(store: StoreBackend, ns: str) -> None:
    parent, one, two = (ns, "s"), (ns, "s", "one"), (ns, "s", "two")
    for i in range(3):
        for stream in (parent, one, two):
            await store.append(stream, f"{stream[-1]}-{i}".encode())
    for stream in (parent, one, two):
        values = [v for _, v in await store.read(stream)]
        assert values == [f"{stream[-1]}-{i}".encode() for i in range(3)]


async def test_streams_and_keys_do_not_interfere(store: StoreBackend, ns: str) -> None:
    shared = (ns, "shared")
    assert await store.put(shared, b"kv") == 1
    seq = await store.append(shared, b"event")
    assert await store.get(shared) == Entry(b"kv", 1)
    assert await store.read(shared) == [(seq, b"event")]

    stream_only = (ns, "stream-only")
    await store.append(stream_only, b"e")
    assert await store.get(stream_only) is None
    assert await store.list_keys((ns,)) == [shared]
    assert await store.put(stream_only, b"kv", expected_version=0) == 1

    assert await store.delete(shared) is True
    assert await store.read(shared) == [(seq, b"event")]
    assert await store.delete_stream(stream_only) is True
    assert await store.get(stream_only) == Entry(b"kv", 1)


async def test_delete_stream(store: StoreBackend, ns: str) -> None:
    doomed, other = (ns, "doomed"), (ns, "other")
    for i in range(3):
        await store.append(doomed, f"{i}".encode())
    kept = await store.append(other, b"kept")
    assert await store.delete_stream(doomed) is True
    assert await store.read(doomed) == []
    assert await store.delete_stream(doomed) is False
    assert await store.delete_stream((ns, "never")) is False
    assert await store.read(other) == [(kept, b"kept")]


async def test_seqs_keep_increasing_after_delete_stream(store: StoreBackend, ns: str) -> None:
    # A reader holding the cursor ``last`` must not miss entries appended after a delete.
    stream = (ns, "recycled")
    last = 0
    for i in range(3):
        last = await store.append(stream, f"{i}".encode())
    await store.delete_stream(stream)
    seq = await store.append(stream, b"after delete")
    assert seq > last
    assert await store.read(stream, after=last) == [(seq, b"after delete")]


# --------------------------------------------------------------------------- values


async def test_one_mib_value_round_trips_byte_exact(store: StoreBackend, ns: str) -> None:
    data = os.urandom(1 << 20)
    assert await store.put((ns, "big"), data) == 1
    entry = await store.get((ns, "big"))
    assert entry is not None and entry.version == 1
    assert entry.value == data
    seq = await store.append((ns, "big-stream"), data)
    assert await store.read((ns, "big-stream")) == [(seq, data)]


@pytest.mark.parametrize(
    "value",
    [
        bytes(range(256)) * 4,
        b"\xff\xfe\xfd",
        b"\xc3\x28\xa0\xa1",
        b"\x00" * 16,
        b'{"not": "json"',
        b"  trailing spaces  ",
        b"\r\n\r\n",
    ],
    ids=["all-bytes", "ff-fe-fd", "invalid-utf8", "nuls", "broken-json", "spaces", "crlf"],
)
async def test_arbitrary_bytes_round_trip(store: StoreBackend, ns: str, value: bytes) -> None:
    await store.put((ns, "k"), value)
    assert await store.get((ns, "k")) == Entry(value, 1)
    seq = await store.append((ns, "s"), value)
    assert await store.read((ns, "s")) == [(seq, value)]


async def test_empty_value_is_a_value(store: StoreBackend, ns: str) -> None:
    assert await store.put((ns, "empty"), b"") == 1
    assert await store.get((ns, "empty")) == Entry(b"", 1)
    assert await store.list_keys((ns,)) == [(ns, "empty")]
    assert await store.put((ns, "empty"), b"", expected_version=1) == 2
    seq = await store.append((ns, "s"), b"")
    assert await store.read((ns, "s")) == [(seq, b"")]


async def test_value_over_limit_raises_before_writing(store_spec: StoreSpec, ns: str) -> None:
    key, stream = (ns, "k"), (ns, "s")
    async with store_from_url(store_spec.url, max_value_bytes=1024) as small:
        with pytest.raises(ValueTooLargeError) as info:
            await small.put(key, b"x" * 1025)
        assert (info.value.key, info.value.size, info.value.limit) == (key, 1025, 1024)
        assert await small.get(key) is None
        assert await small.list_keys((ns,)) == []

        assert await small.put(key, b"y" * 1024) == 1
        with pytest.raises(ValueTooLargeError):
            await small.put(key, b"z" * 4096, expected_version=1)
        assert await small.get(key) == Entry(b"y" * 1024, 1)

        with pytest.raises(ValueTooLargeError):
            await small.append(stream, b"x" * 1025)
        assert await small.read(stream) == []
        seq = await small.append(stream, b"y" * 1024)
        assert await small.read(stream) == [(seq, b"y" * 1024)]


async def test_non_bytes_value_is_rejected(store: StoreBackend, ns: str) -> None:
    with pytest.raises(TypeError):
        await store.put((ns, "k"), "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await store.append((ns, "s"), "text")  # type: ignore[arg-type]
    assert await store.get((ns, "k")) is None
    assert await store.read((ns, "s")) == []


# --------------------------------------------------------------------------- key segments

UNICODE_SEGMENTS = [
    "😀",
    "🧑‍🤝‍🧑",
    "日本語",
    "中文键",
    "한국어",
    "שלום",
    "مرحبا",
    "\u202eevil",
    "é",
    "e\u0301",
    "ß",
    "ss",
    "Ω",
    "\u00a0",
    "\ufeff",
]

HOSTILE_SEGMENTS = [
    ":",
    "/",
    "..",
    ".",
    "...",
    "{}",
    "{a}",
    "a",
    "A",
    "a ",
    " a",
    "*",
    "?",
    "[x]",
    "%",
    "%2F",
    "%25",
    "%2E",
    "a/b",
    "a:b",
    "b",
    "../../etc",
    "..\\..",
    "\\",
    "#",
    "|",
    "~",
    "\t",
    "\n",
    "\r",
    "\x7f",
    "-",
    "_",
    "'",
    '"',
    "'; DROP TABLE store; --",
    "<>",
    "$1",
    "NUL",
    "con",
]


async def assert_round_trip_without_collisions(
    store: StoreBackend, ns: str, keys: list[Key]
) -> None:
    assert len(set(keys)) == len(keys)
    for i, key in enumerate(keys):
        assert await store.put(key, f"value-{i}".encode(), expected_version=0) == 1, key
    for i, key in enumerate(keys):
        assert await store.get(key) == Entry(f"value-{i}".encode(), 1), key
    assert await list_all(store, (ns,)) == by_encoding(keys)


async def test_unicode_segments_round_trip(store: StoreBackend, ns: str) -> None:
    keys: list[Key] = [(ns, s) for s in UNICODE_SEGMENTS]
    keys += [(ns, "dir", s, "leaf") for s in UNICODE_SEGMENTS]
    await assert_round_trip_without_collisions(store, ns, keys)
    for s in UNICODE_SEGMENTS:
        assert await store.list_keys((ns, "dir", s)) == [(ns, "dir", s, "leaf")], s


async def test_hostile_segments_round_trip_without_collisions(store: StoreBackend, ns: str) -> None:
    keys: list[Key] = [(ns, s) for s in HOSTILE_SEGMENTS]
    # Keys whose naive joins would collide with single-segment keys above.
    keys += [(ns, "a", "b"), (ns, "a", "b", "c"), (ns, "..", "x"), (ns, ".", "x")]
    await assert_round_trip_without_collisions(store, ns, keys)


async def test_hostile_prefixes_list_only_their_children(store: StoreBackend, ns: str) -> None:
    for s in HOSTILE_SEGMENTS:
        await store.put((ns, "dir", s, "leaf"), s.encode())
    for s in HOSTILE_SEGMENTS:
        assert await store.list_keys((ns, "dir", s)) == [(ns, "dir", s, "leaf")], s
        assert await store.get((ns, "dir", s, "leaf")) == Entry(s.encode(), 1), s


async def test_hostile_stream_names_are_distinct(store: StoreBackend, ns: str) -> None:
    streams: list[Key] = [(ns, s) for s in HOSTILE_SEGMENTS + UNICODE_SEGMENTS]
    streams.append((ns, "a", "b"))
    for stream in streams:
        await store.append(stream, repr(stream).encode())
    for stream in streams:
        assert [v for _, v in await store.read(stream)] == [repr(stream).encode()], stream


async def test_long_segments_round_trip(store: StoreBackend, ns: str) -> None:
    keys: list[Key] = [(ns, "x" * 300), (ns, "日" * 100), (ns, "/" * 100), (ns, "x" * 299)]
    await assert_round_trip_without_collisions(store, ns, keys)


BAD_KEYS: list[tuple[str, Callable[[str], object]]] = [
    ("nul", lambda ns: (ns, "a\x00b")),
    ("nul-only", lambda ns: (ns, "\x00")),
    ("empty-segment", lambda ns: (ns, "")),
    ("empty-first-segment", lambda ns: ("", ns)),
    ("empty-key", lambda ns: ()),
    ("int-segment", lambda ns: (ns, 1)),
    ("none-segment", lambda ns: (ns, None)),
    ("bytes-segment", lambda ns: (ns, b"a")),
    ("plain-str", lambda ns: ns),
]


@pytest.mark.parametrize("make_key", [m for _, m in BAD_KEYS], ids=[i for i, _ in BAD_KEYS])
async def test_invalid_keys_raise_value_error(
    store: StoreBackend, ns: str, make_key: Callable[[str], object]
) -> None:
    bad: object = make_key(ns)
    ops: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("get", lambda: store.get(bad)),  # type: ignore[arg-type]
        ("put", lambda: store.put(bad, b"v")),  # type: ignore[arg-type]
        ("put-create", lambda: store.put(bad, b"v", expected_version=0)),  # type: ignore[arg-type]
        ("delete", lambda: store.delete(bad)),  # type: ignore[arg-type]
        ("append", lambda: store.append(bad, b"v")),  # type: ignore[arg-type]
        ("read", lambda: store.read(bad)),  # type: ignore[arg-type]
        ("delete_stream", lambda: store.delete_stream(bad)),  # type: ignore[arg-type]
        ("list_keys-after", lambda: store.list_keys((ns,), after=bad)),  # type: ignore[arg-type]
    ]
    if bad != ():  # an empty prefix is valid: it lists everything
        ops.append(("list_keys-prefix", lambda: store.list_keys(bad)))  # type: ignore[arg-type]
    failures = []
    for name, call in ops:
        try:
            await call()
        except ValueError:
            continue
        except Exception as exc:
            failures.append(f"{name}: raised {type(exc).__name__}: {exc}")
        else:
            failures.append(f"{name}: did not raise")
    assert not failures, f"key {bad!r}: " + "; ".join(failures)
    assert await store.list_keys((ns,)) == []


async def test_invalid_arguments_raise_value_error(store: StoreBackend, ns: str) -> None:
    key = (ns, "k")
    await store.put(key, b"v")
    for call in (
        lambda: store.put(key, b"w", expected_version=-1),
        lambda: store.list_keys((ns,), limit=0),
        lambda: store.read((ns, "s"), limit=0),
        lambda: store.read((ns, "s"), after=-1),
    ):
        with pytest.raises(ValueError):
            await call()
    assert await store.get(key) == Entry(b"v", 1)
