"""Listing keys by prefix: segment-wise, in encoded order, paged by cursor."""

from __future__ import annotations

from ..store import Entry, Key, StoreBackend
from ._store_support import (
    by_encoding,
)


class ListingTests:
    """Listing keys by prefix: segment-wise, in encoded order, paged by cursor."""

    async def test_list_keys_prefix_is_segment_wise(self, store: StoreBackend, ns: str) -> None:
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
        assert await store.list_keys((ns, "a", "b")) == [
            (ns, "a", "b", "x"),
            (ns, "a", "b", "y", "z"),
        ]
        assert await store.list_keys((ns, "a", "bc")) == [(ns, "a", "bc", "x")]
        assert await store.list_keys((ns, "ab")) == [(ns, "ab", "x")]
        assert await store.list_keys((ns, "a")) == by_encoding(keys[:5])
        assert await store.list_keys((ns,)) == by_encoding(keys)

    async def test_list_keys_orders_by_encoded_bytes(self, store: StoreBackend, ns: str) -> None:
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

    async def test_list_keys_pages_with_cursor(self, store: StoreBackend, ns: str) -> None:
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

    async def test_list_keys_limit_returns_the_first_keys(
        self, store: StoreBackend, ns: str
    ) -> None:
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

    async def test_list_keys_cursor_may_name_a_deleted_key(
        self, store: StoreBackend, ns: str
    ) -> None:
        for c in "abcde":
            await store.put((ns, c), b"v")
        first = await store.list_keys((ns,), limit=2)
        assert first == [(ns, "a"), (ns, "b")]
        await store.delete((ns, "b"))
        assert await store.list_keys((ns,), after=first[-1]) == [(ns, "c"), (ns, "d"), (ns, "e")]

    async def test_list_keys_unknown_prefix_is_empty(self, store: StoreBackend, ns: str) -> None:
        await store.put((ns, "x", "y"), b"v")
        assert await store.list_keys((ns, "nope")) == []
        assert await store.list_keys((ns, "x", "y")) == []
        assert await store.list_keys((ns, "x", "y", "z")) == []
        assert await store.list_keys((ns + "-other",)) == []

    async def test_list_keys_prefix_is_not_a_pattern(self, store: StoreBackend, ns: str) -> None:
        # Segments that are wildcards in SQL LIKE, Redis glob patterns or case-insensitive collations.
        segments = ["x", "a25", "a", "A", "_", "%", "*", "?", "[a]", "\\", "a%25", "%25"]
        for s in segments:
            await store.put((ns, s, "k"), s.encode())
        for s in segments:
            assert await store.list_keys((ns, s)) == [(ns, s, "k")], f"prefix {(ns, s)!r}"
        assert await store.list_keys((ns,)) == by_encoding([(ns, s, "k") for s in segments])
