"""Streams: sequence numbers, reads after a cursor, deletion."""

from __future__ import annotations

from itertools import pairwise

from ..store import Entry, StoreBackend


class StreamTests:
    """Streams: sequence numbers, reads after a cursor, deletion."""

    async def test_append_allocates_increasing_seqs(self, store: StoreBackend, ns: str) -> None:
        stream = (ns, "events")
        values = [f"event-{i}".encode() for i in range(10)]
        seqs = [await store.append(stream, v) for v in values]
        assert all(b > a for a, b in pairwise(seqs)), seqs
        assert seqs[0] > 0
        assert await store.read(stream) == list(zip(seqs, values, strict=True))

    async def test_read_after_and_limit(self, store: StoreBackend, ns: str) -> None:
        stream = (ns, "events")
        values = [f"event-{i}".encode() for i in range(30)]
        entries = [(await store.append(stream, v), v) for v in values]
        assert await store.read(stream, after=0, limit=3) == entries[:3]
        assert await store.read(stream, after=entries[9][0], limit=5) == entries[10:15]
        assert await store.read(stream, after=entries[9][0]) == entries[10:]
        assert await store.read(stream, after=entries[-2][0], limit=5) == entries[-1:]
        assert await store.read(stream, after=entries[-1][0]) == []

    async def test_read_pages_through_a_long_stream(self, store: StoreBackend, ns: str) -> None:
        stream = (ns, "long")
        expected = [
            (await store.append(stream, f"{i}".encode()), f"{i}".encode()) for i in range(250)
        ]
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

    async def test_read_absent_stream_is_empty(self, store: StoreBackend, ns: str) -> None:
        assert await store.read((ns, "nothing")) == []
        assert await store.read((ns, "nothing"), after=5, limit=1) == []

    async def test_streams_are_independent(self, store: StoreBackend, ns: str) -> None:
        parent, one, two = (ns, "s"), (ns, "s", "one"), (ns, "s", "two")
        for i in range(3):
            for stream in (parent, one, two):
                await store.append(stream, f"{stream[-1]}-{i}".encode())
        for stream in (parent, one, two):
            values = [v for _, v in await store.read(stream)]
            assert values == [f"{stream[-1]}-{i}".encode() for i in range(3)]

    async def test_streams_and_keys_do_not_interfere(self, store: StoreBackend, ns: str) -> None:
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

    async def test_delete_stream(self, store: StoreBackend, ns: str) -> None:
        doomed, other = (ns, "doomed"), (ns, "other")
        for i in range(3):
            await store.append(doomed, f"{i}".encode())
        kept = await store.append(other, b"kept")
        assert await store.delete_stream(doomed) is True
        assert await store.read(doomed) == []
        assert await store.delete_stream(doomed) is False
        assert await store.delete_stream((ns, "never")) is False
        assert await store.read(other) == [(kept, b"kept")]

    async def test_seqs_keep_increasing_after_delete_stream(
        self, store: StoreBackend, ns: str
    ) -> None:
        # A reader holding the cursor ``last`` must not miss entries appended after a delete.
        stream = (ns, "recycled")
        last = 0
        for i in range(3):
            last = await store.append(stream, f"{i}".encode())
        await store.delete_stream(stream)
        seq = await store.append(stream, b"after delete")
        assert seq > last
        assert await store.read(stream, after=last) == [(seq, b"after delete")]
