"""``TinyStore``: a store backend written outside agentscope_teams, as a third party would.

It keeps entries and streams in dicts of its own and uses only the package's public store API
(``StoreBackend`` and its argument checks, the key encoding). ``open_tiny`` is its opener for
``tiny://`` URLs, registered by the entry point ``agentscope_teams.stores: tiny`` or by
``register_store_scheme("tiny", open_tiny)``.
"""

from __future__ import annotations

import time
from typing import Any

from agentscope_teams.errors import LeaseLostError, VersionConflict
from agentscope_teams.store import Entry, Fence, Key, StoreBackend, encode_key, validate_key
from agentscope_teams.store.base import check_expected, validate_prefix
from agentscope_teams.store.capabilities import StoreCapabilities


class TinyStore(StoreBackend):
    """Entries ``{key: (value, version, deadline)}`` and streams ``{stream: [(seq, value)]}``."""

    capabilities = StoreCapabilities(
        signals=False, shared_across_processes=False, fenced_delete=True
    )

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._entries: dict[Key, tuple[bytes, int, float | None]] = {}
        self._streams: dict[Key, list[tuple[int, bytes]]] = {}
        self._last_seq: dict[Key, int] = {}

    def _entry(self, key: Key) -> tuple[bytes, int, float | None] | None:
        found = self._entries.get(key)
        if found is not None and found[2] is not None and found[2] <= time.monotonic():
            del self._entries[key]
            return None
        return found

    async def get(self, key: Key) -> Entry | None:
        found = self._entry(validate_key(key))
        return None if found is None else Entry(found[0], found[1])

    async def put(
        self,
        key: Key,
        value: bytes,
        *,
        expected_version: int | None = None,
        ttl: float | None = None,
        indexed: bool = True,
        fence: Fence | None = None,
    ) -> int:
        k = self._check_put(key, value, expected_version, ttl)
        f = self._check_fence(k, fence)
        if f is not None and ((held := self._entry(f.key)) is None or held[0] != f.value):
            raise LeaseLostError(k, f.key)
        found = self._entry(k)
        version = 0 if found is None else found[1]
        if expected_version is not None and expected_version != version:
            raise VersionConflict(k, expected_version, version)
        deadline = None if ttl is None else time.monotonic() + ttl
        self._entries[k] = (bytes(value), version + 1, deadline)
        if f is not None and f.release:
            self._entries.pop(f.key, None)
        return version + 1

    async def delete(
        self,
        key: Key,
        *,
        expected_version: int | None = None,
        indexed: bool = True,
        fence: Fence | None = None,
    ) -> bool:
        k = validate_key(key)
        check_expected(expected_version)
        f = self._check_delete_fence(k, fence)
        if f is not None and ((held := self._entry(f.key)) is None or held[0] != f.value):
            raise LeaseLostError(k, f.key)
        found = self._entry(k)
        version = 0 if found is None else found[1]
        if expected_version is not None and expected_version != version:
            raise VersionConflict(k, expected_version, version)
        return self._entries.pop(k, None) is not None

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        self._check_page(limit)
        p = validate_prefix(prefix)
        start = None if after is None else encode_key(validate_key(after, "after"))
        below = [k for k in list(self._entries) if len(k) > len(p) and k[: len(p)] == p]
        below = [k for k in below if self._entry(k) is not None]
        ordered = sorted(below, key=encode_key)
        return [k for k in ordered if start is None or encode_key(k) > start][:limit]

    async def append(self, stream: Key, value: bytes) -> int:
        s = self._check_append(stream, value)
        seq = self._last_seq.get(s, 0) + 1
        self._last_seq[s] = seq
        self._streams.setdefault(s, []).append((seq, bytes(value)))
        return seq

    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]:
        s = validate_key(stream, "stream")
        self._check_page(limit, after)
        return [item for item in self._streams.get(s, []) if item[0] > after][:limit]

    async def delete_stream(self, stream: Key) -> bool:
        return self._streams.pop(validate_key(stream, "stream"), None) is not None


def open_tiny(url: str, **options: Any) -> TinyStore:
    """The opener of ``tiny://`` URLs (the URL names nothing more)."""
    return TinyStore(**options)
