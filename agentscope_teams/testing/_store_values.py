"""Values and keys: arbitrary bytes, size limits, hostile and invalid key segments."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

import pytest

from ..errors import ValueTooLargeError
from ..store import Entry, Key, StoreBackend
from ._store_support import (
    BAD_KEYS,
    HOSTILE_SEGMENTS,
    UNICODE_SEGMENTS,
    StoreFactory,
    assert_round_trip_without_collisions,
)


class ValueTests:
    """Values and keys: arbitrary bytes, size limits, hostile and invalid key segments."""

    async def test_one_mib_value_round_trips_byte_exact(self, store: StoreBackend, ns: str) -> None:
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
    async def test_arbitrary_bytes_round_trip(
        self, store: StoreBackend, ns: str, value: bytes
    ) -> None:
        await store.put((ns, "k"), value)
        assert await store.get((ns, "k")) == Entry(value, 1)
        seq = await store.append((ns, "s"), value)
        assert await store.read((ns, "s")) == [(seq, value)]

    async def test_empty_value_is_a_value(self, store: StoreBackend, ns: str) -> None:
        assert await store.put((ns, "empty"), b"") == 1
        assert await store.get((ns, "empty")) == Entry(b"", 1)
        assert await store.list_keys((ns,)) == [(ns, "empty")]
        assert await store.put((ns, "empty"), b"", expected_version=1) == 2
        seq = await store.append((ns, "s"), b"")
        assert await store.read((ns, "s")) == [(seq, b"")]

    async def test_value_over_limit_raises_before_writing(
        self, store_factory: StoreFactory, ns: str
    ) -> None:
        key, stream = (ns, "k"), (ns, "s")
        async with store_factory(max_value_bytes=1024) as small:
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

    async def test_non_bytes_value_is_rejected(self, store: StoreBackend, ns: str) -> None:
        with pytest.raises(TypeError):
            await store.put((ns, "k"), "text")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            await store.append((ns, "s"), "text")  # type: ignore[arg-type]
        assert await store.get((ns, "k")) is None
        assert await store.read((ns, "s")) == []

    async def test_unicode_segments_round_trip(self, store: StoreBackend, ns: str) -> None:
        keys: list[Key] = [(ns, s) for s in UNICODE_SEGMENTS]
        keys += [(ns, "dir", s, "leaf") for s in UNICODE_SEGMENTS]
        await assert_round_trip_without_collisions(store, ns, keys)
        for s in UNICODE_SEGMENTS:
            assert await store.list_keys((ns, "dir", s)) == [(ns, "dir", s, "leaf")], s

    async def test_hostile_segments_round_trip_without_collisions(
        self, store: StoreBackend, ns: str
    ) -> None:
        keys: list[Key] = [(ns, s) for s in HOSTILE_SEGMENTS]
        # Keys whose naive joins would collide with single-segment keys above.
        keys += [(ns, "a", "b"), (ns, "a", "b", "c"), (ns, "..", "x"), (ns, ".", "x")]
        await assert_round_trip_without_collisions(store, ns, keys)

    async def test_hostile_prefixes_list_only_their_children(
        self, store: StoreBackend, ns: str
    ) -> None:
        for s in HOSTILE_SEGMENTS:
            await store.put((ns, "dir", s, "leaf"), s.encode())
        for s in HOSTILE_SEGMENTS:
            assert await store.list_keys((ns, "dir", s)) == [(ns, "dir", s, "leaf")], s
            assert await store.get((ns, "dir", s, "leaf")) == Entry(s.encode(), 1), s

    async def test_hostile_stream_names_are_distinct(self, store: StoreBackend, ns: str) -> None:
        streams: list[Key] = [(ns, s) for s in HOSTILE_SEGMENTS + UNICODE_SEGMENTS]
        streams.append((ns, "a", "b"))
        for stream in streams:
            await store.append(stream, repr(stream).encode())
        for stream in streams:
            assert [v for _, v in await store.read(stream)] == [repr(stream).encode()], stream

    async def test_long_segments_round_trip(self, store: StoreBackend, ns: str) -> None:
        keys: list[Key] = [(ns, "x" * 300), (ns, "日" * 100), (ns, "/" * 100), (ns, "x" * 299)]
        await assert_round_trip_without_collisions(store, ns, keys)

    @pytest.mark.parametrize("make_key", [m for _, m in BAD_KEYS], ids=[i for i, _ in BAD_KEYS])
    async def test_invalid_keys_raise_value_error(
        self, store: StoreBackend, ns: str, make_key: Callable[[str], object]
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

    async def test_invalid_arguments_raise_value_error(self, store: StoreBackend, ns: str) -> None:
        key = (ns, "k")
        await store.put(key, b"v")
        for call in (
            lambda: store.put(key, b"w", expected_version=-1),
            lambda: store.delete(key, expected_version=-1),
            lambda: store.list_keys((ns,), limit=0),
            lambda: store.read((ns, "s"), limit=0),
            lambda: store.read((ns, "s"), after=-1),
        ):
            with pytest.raises(ValueError):
                await call()
        assert await store.get(key) == Entry(b"v", 1)
