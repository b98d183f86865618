"""``InMemoryStore``: a dict in one event loop, for tests and single-process demos.

Operations do not await, so each one (a fenced put or delete with its fence check, and a put's
release, included) is atomic within the loop. ``indexed`` is ignored: listing scans the dict.

Signals (:class:`~.base.Signals`): ``wait_signal`` parks an :class:`anyio.Event` under each channel;
``signal`` sets the events of that channel (:class:`~._signal_waiters.LocalWaiters`). Set ``signals_enabled = False`` to make callers poll.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Sequence

from ..errors import LeaseLostError, VersionConflict
from ._signal_waiters import LocalWaiters
from .base import (
    DEFAULT_MAX_VALUE_BYTES,
    Entry,
    Fence,
    Key,
    StoreBackend,
    encode_key,
    encode_prefix,
    validate_key,
    validate_prefix,
)
from .capabilities import StoreCapabilities


class InMemoryStore(StoreBackend):
    """Process-local store. Not shared across processes; everything is lost when the process exits."""

    shared_across_processes = False
    metrics_backend = "memory"

    def __init__(self, *, max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES) -> None:
        super().__init__(max_value_bytes=max_value_bytes)
        # encoded key -> (key, value, version, expires_at monotonic or None)
        self._data: dict[str, tuple[Key, bytes, int, float | None]] = {}
        self._streams: dict[Key, tuple[list[int], list[bytes]]] = {}
        self._stream_hwm: dict[Key, int] = {}
        self._waiters = LocalWaiters()
        self.signals_enabled = True

    @property
    def capabilities(self) -> StoreCapabilities:
        """Signals (unless ``signals_enabled`` is False), fencing, listing; one process only."""
        return StoreCapabilities(
            signals=self.signals_enabled,
            shared_across_processes=False,
            shared_across_hosts=False,
            fenced_delete=True,
            purges_expired=True,
        )

    def _live(self, enc: str) -> tuple[Key, bytes, int, float | None] | None:
        item = self._data.get(enc)
        if item is None:
            return None
        if item[3] is not None and item[3] <= time.monotonic():
            del self._data[enc]
            return None
        return item

    def _version(self, key: Key, enc: str, expected: int | None) -> int:
        """The live version of ``key`` (0: absent); VersionConflict unless it is ``expected``
        (None: any)."""
        item = self._live(enc)
        found = 0 if item is None else item[2]
        if expected is not None and expected != found:
            raise VersionConflict(key, expected, found)
        return found

    def _check_held(self, key: Key, fence: Fence | None) -> None:
        """LeaseLostError unless ``fence`` (if any) holds: its key has exactly its value."""
        if fence is not None:
            held = self._live(encode_key(fence.key))
            if held is None or held[1] != fence.value:
                raise LeaseLostError(key, fence.key)

    async def get(self, key: Key) -> Entry | None:
        item = self._live(encode_key(validate_key(key)))
        return None if item is None else Entry(item[1], item[2])

    async def get_many(self, keys: Sequence[Key]) -> list[Entry | None]:
        checked = [encode_key(validate_key(k)) for k in keys]
        return [
            None if (item := self._live(e)) is None else Entry(item[1], item[2]) for e in checked
        ]

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
        fence = self._check_fence(k, fence)
        self._check_held(k, fence)
        enc = encode_key(k)
        version = self._version(k, enc, expected_version) + 1
        expires = None if ttl is None else time.monotonic() + ttl
        self._data[enc] = (k, bytes(value), version, expires)
        if fence is not None and fence.release:
            del self._data[encode_key(fence.key)]
        return version

    async def delete(
        self,
        key: Key,
        *,
        expected_version: int | None = None,
        indexed: bool = True,
        fence: Fence | None = None,
    ) -> bool:
        k = self._check_delete(key, expected_version)
        self._check_held(k, self._check_delete_fence(k, fence))
        enc = encode_key(k)
        self._version(k, enc, expected_version)
        return self._data.pop(enc, None) is not None

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        self._check_page(limit)
        p = encode_prefix(validate_prefix(prefix))
        start = encode_key(validate_key(after, "after")) if after is not None else ""
        names = sorted(e for e in self._data if e.startswith(p) and e > start)
        out: list[Key] = []
        for enc in names:
            item = self._live(enc)
            if item is not None:
                out.append(item[0])
                if len(out) >= limit:
                    break
        return out

    async def purge_expired(self, limit: int | None = None) -> int:
        """Drop expired entries (at most ``limit``); how many went (:mod:`.expiry`)."""
        if limit is not None:
            self._check_page(limit)
        now, gone = time.monotonic(), 0
        for enc, item in list(self._data.items()):
            if limit is not None and gone >= limit:
                break
            if item[3] is not None and item[3] <= now:
                del self._data[enc]
                gone += 1
        return gone

    async def append(self, stream: Key, value: bytes) -> int:
        k = self._check_append(stream, value)
        seqs, values = self._streams.setdefault(k, ([], []))
        seq = self._stream_hwm.get(k, 0) + 1
        self._stream_hwm[k] = seq
        seqs.append(seq)
        values.append(bytes(value))
        return seq

    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]:
        k = validate_key(stream, "stream")
        self._check_page(limit, after)
        seqs, values = self._streams.get(k, ([], []))
        i = bisect.bisect_right(seqs, after)
        return list(zip(seqs[i : i + limit], values[i : i + limit], strict=True))

    async def delete_stream(self, stream: Key) -> bool:
        return self._streams.pop(validate_key(stream, "stream"), None) is not None

    # -- signals ---------------------------------------------------------------------------

    async def signal(self, channel: Key) -> None:
        self._waiters.wake(encode_key(validate_key(channel, "channel")))

    async def wait_signal(self, channels: Sequence[Key], timeout: float) -> bool:  # noqa: ASYNC109
        """True when one of ``channels`` is signalled within ``timeout`` seconds, else False."""
        names = [encode_key(validate_key(c, "channel")) for c in channels]
        return await self._waiters.wait(names, timeout)
