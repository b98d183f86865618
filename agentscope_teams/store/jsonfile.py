"""``JsonFileStore``: the embedded default store, one human-readable JSON file per key.

Layout under ``root`` (every name is built from :func:`~.base.path_segment`, so no key escapes
``root``)::

    kv/<seg>/<seg>/<last>.json           one file per key: key, version, expires_at, value
    streams/<seg>/<last>.stream/         one directory per stream
        00000000000000000001.jsonl       segment files named by their first seq, one entry a line
        meta.json                        the highest seq ever handed out, written by delete_stream
    locks/<nn>.lock                      fcntl.flock lock files, one per stripe

* Directory names ending in ``.json`` or ``.stream`` get a ``#`` appended, so the file of key
  ``(a, b)`` (``a/b.json``) never collides with the directory of key ``(a, "b.json", c)``. Encoded
  segments over 200 bytes become ``<first 150 bytes>#<sha256 prefix>`` (:func:`~.base.path_segment`,
  the rule of every path made from an id); the JSON file holds the real key, so listing stays exact.
  ``#`` never occurs in an encoded segment, so these names are unique.
* Writes go to ``<name>#.tmp`` in the same directory, are fsynced, then ``os.replace``-d over the
  target and the directory is fsynced: readers see the old or the new file, never a torn one.
* Conditional writes and seq allocation run under an ``fcntl.flock`` on one of 64 lock files picked by
  a stable hash of the key (striped locks: bounded lock files, little false sharing). The lock file is
  opened afresh for every operation, so two threads of one process exclude each other too; an
  in-process ``anyio.Lock`` per stripe keeps waiting coroutines off the worker threads.
* A stream line is only valid once its trailing newline is on disk; readers ignore a partial last line
  and the next ``append`` truncates it (a SIGKILL mid-append loses only that unreturned entry).
* A fenced ``put`` holds the locks of both keys (ascending stripe order), checks the fence, writes,
  and deletes the fence key on release; a fenced ``delete`` likewise checks the fence and deletes.
  ``indexed`` is ignored (listing walks the directories).
* Expired entries are skipped by readers and overwritten or removed by the next write or delete,
  or by :meth:`JsonFileStore.purge_expired` (a walk of ``kv/``; ``serve`` runs it in batches).

Safe for several processes on one host (local file system with ``flock``), not across hosts.
Names, records and atomic I/O live in :mod:`._jsonfile_io`, locks in :mod:`._jsonfile_locks`, the
listing walk in :mod:`._jsonfile_listing` and stream segments in :mod:`._jsonfile_streams`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread

from ..errors import ConfigurationError, LeaseLostError, VersionConflict
from . import _jsonfile_streams as streams
from ._jsonfile_io import (
    SCHEMA_VERSION,
    Header,
    damaged,
    dir_name,
    fsync_dir,
    header_of,
    parse,
    read_header,
    render,
    value_of,
    write_atomic,
)
from ._jsonfile_listing import expired_under, walk
from ._jsonfile_locks import LOCK_STRIPES, StripeLocks, stripe_of
from .base import (
    DEFAULT_MAX_VALUE_BYTES,
    Entry,
    Fence,
    Key,
    StoreBackend,
    encode_key,
    encode_prefix,
    path_segment,
    validate_key,
    validate_prefix,
)
from .capabilities import StoreCapabilities

__all__ = [
    "LOCK_STRIPES",
    "SCHEMA_VERSION",
    "SEGMENT_MAX_BYTES",
    "SEGMENT_MAX_ENTRIES",
    "JsonFileStore",
]

SEGMENT_MAX_ENTRIES = 1000
SEGMENT_MAX_BYTES = 8 * 1024 * 1024


class JsonFileStore(StoreBackend):
    """Key-value entries and streams as JSON files under ``root``, shared by processes on one host.

    ``lock_timeout`` bounds how long an operation waits for a key's lock before raising
    :class:`~agentscope_teams.errors.StoreError`. Use one instance from one event loop at a time.
    """

    shared_across_processes = True
    shared_across_hosts = False
    metrics_backend = "file"

    #: No signals (callers poll), fencing and listing; processes of one host only.
    capabilities = StoreCapabilities(
        signals=False, shared_across_hosts=False, fenced_delete=True, purges_expired=True
    )

    def __init__(
        self,
        root: Path | str,
        *,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        lock_timeout: float = 30.0,
    ) -> None:
        super().__init__(max_value_bytes=max_value_bytes)
        if not lock_timeout > 0:
            raise ConfigurationError(f"lock_timeout must be > 0 seconds, got {lock_timeout!r}")
        self.root = Path(root).expanduser().absolute()
        self._kv = self.root / "kv"
        self._streams = self.root / "streams"
        self._lock_dir = self.root / "locks"
        self._locks = StripeLocks(self._lock_dir, lock_timeout)

    def __repr__(self) -> str:
        return f"JsonFileStore({str(self.root)!r})"

    @property
    def lock_timeout(self) -> float:
        return self._locks.timeout

    @lock_timeout.setter
    def lock_timeout(self, value: float) -> None:
        self._locks.timeout = value

    async def setup(self) -> None:
        """Create the directories under ``root``. Idempotent; other operations also create lazily."""
        await anyio.to_thread.run_sync(self._setup_sync)

    def _setup_sync(self) -> None:
        fix = "pass a directory this user can write to (file:///path/to/store)"
        if self.root.exists() and not self.root.is_dir():
            raise ConfigurationError(f"file store root {self.root} is not a directory; {fix}")
        try:
            for d in (self._kv, self._streams, self._lock_dir):
                d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot create the file store under {self.root}: {exc.strerror or exc}; {fix}"
            ) from exc

    # ------------------------------------------------------------------------- locking

    _stripe = staticmethod(stripe_of)

    def _flock(self, stripe: int, deadline: float) -> AbstractContextManager[None]:
        """Hold the file lock of ``stripe`` (blocking; give up at ``deadline``, a monotonic time)."""
        return self._locks.flock(stripe, deadline)

    # ------------------------------------------------------------------------- keys

    def _key_path(self, key: Key) -> Path:
        return self._kv.joinpath(*map(dir_name, key[:-1]), path_segment(key[-1]) + ".json")

    def _header(self, path: Path, key: Key) -> Header | None:
        head = read_header(path)
        if head is not None and head.key != key:
            raise damaged(path, f"holds key {head.key!r}, not {key!r}; the file was moved")
        return head

    async def get(self, key: Key) -> Entry | None:
        k = validate_key(key)
        return await anyio.to_thread.run_sync(self._get_sync, k)

    async def get_many(self, keys: Sequence[Key]) -> list[Entry | None]:
        """Every file read in one worker thread."""
        checked = [validate_key(k) for k in keys]
        return await anyio.to_thread.run_sync(lambda: [self._get_sync(k) for k in checked])

    def _get_sync(self, key: Key) -> Entry | None:
        path = self._key_path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        data = parse(raw, path)
        head = header_of(data, path)
        if head.key != key:
            raise damaged(path, f"holds key {head.key!r}, not {key!r}; the file was moved")
        return Entry(value_of(data, path), head.version) if head.live(time.time()) else None

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
        data = bytes(value)
        return await self._locks.run(
            _stripes(k, f), lambda: self._put_sync(k, data, expected_version, ttl, f)
        )

    def _check_held(self, key: Key, fence: Fence | None) -> None:
        """LeaseLostError unless ``fence`` (if any) holds; under the locks of both keys."""
        if fence is not None:
            held = self._get_sync(fence.key)
            if held is None or held.value != fence.value:
                raise LeaseLostError(key, fence.key)

    def _put_sync(
        self, key: Key, value: bytes, expected: int | None, ttl: float | None, fence: Fence | None
    ) -> int:
        """The write, under the locks of ``key`` and of the fence's key (when fenced)."""
        now = time.time()
        self._check_held(key, fence)
        path = self._key_path(key)
        head = self._header(path, key)
        found = head.version if head is not None and head.live(now) else 0
        if expected is not None and expected != found:
            raise VersionConflict(key, expected, found)
        expires = None if ttl is None else now + ttl
        write_atomic(path, render(key, found + 1, expires, value))
        if fence is not None and fence.release:
            self._delete_sync(fence.key, None)
        return found + 1

    async def delete(
        self,
        key: Key,
        *,
        expected_version: int | None = None,
        indexed: bool = True,
        fence: Fence | None = None,
    ) -> bool:
        k = self._check_delete(key, expected_version)
        f = self._check_delete_fence(k, fence)
        return await self._locks.run(
            _stripes(k, f), lambda: self._delete_sync(k, expected_version, f)
        )

    def _delete_sync(self, key: Key, expected: int | None, fence: Fence | None = None) -> bool:
        self._check_held(key, fence)
        path = self._key_path(key)
        head = self._header(path, key)
        live = head is not None and head.live(time.time())
        found = head.version if head is not None and live else 0
        if expected is not None and expected != found:
            raise VersionConflict(key, expected, found)
        if head is None:
            return False
        self._remove(path)
        return live

    def _remove(self, path: Path) -> None:
        """Remove the key file ``path`` durably, and the directories it leaves empty."""
        path.unlink(missing_ok=True)
        try:
            fsync_dir(path.parent)
        except FileNotFoundError:  # a delete of a sibling key (another stripe) pruned it: empty
            return
        self._prune_dirs(path.parent)

    def _prune_dirs(self, d: Path) -> None:
        """Remove now-empty directories up to ``kv/``; a non-empty one stops the walk."""
        while d != self._kv and d.is_relative_to(self._kv):
            try:
                d.rmdir()
            except OSError:
                return
            d = d.parent

    async def purge_expired(self, limit: int | None = None) -> int:
        """Remove the files of expired entries (at most ``limit``; each checked again under its
        key's lock, so a key written again meanwhile stays) and the directories they leave
        empty; how many went. It walks every key file of ``kv/`` to find them."""
        if limit is not None:
            self._check_page(limit)
        found = await anyio.to_thread.run_sync(expired_under, self._kv, limit)
        gone = 0
        for key in found:
            gone += await self._locks.run(stripe_of("kv", key), partial(self._purge_sync, key))
        return gone

    def _purge_sync(self, key: Key) -> int:
        """Remove ``key``'s file if it has expired (1), else 0; under the key's lock."""
        path = self._key_path(key)
        head = self._header(path, key)
        if head is None or head.live(time.time()):
            return 0
        self._remove(path)
        return 1

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        self._check_page(limit)
        p = validate_prefix(prefix)
        start = None if after is None else encode_key(validate_key(after, "after"))
        return await anyio.to_thread.run_sync(self._list_sync, p, limit, start)

    def _list_sync(self, prefix: Key, limit: int, after: str | None) -> list[Key]:
        out: list[Key] = []
        d = self._kv.joinpath(*map(dir_name, prefix))
        walk(d, encode_prefix(prefix), len(prefix), after, limit, out)
        return out

    # ------------------------------------------------------------------------- streams

    def _stream_dir(self, stream: Key) -> Path:
        return self._streams.joinpath(
            *map(dir_name, stream[:-1]), path_segment(stream[-1]) + ".stream"
        )

    async def append(self, stream: Key, value: bytes) -> int:
        k = self._check_append(stream, value)
        data = bytes(value)
        return await self._locks.run(stripe_of("stream", k), lambda: self._append_sync(k, data))

    def _append_sync(self, stream: Key, value: bytes) -> int:
        d = self._stream_dir(stream)
        segs = streams.segments(d)
        last, size = streams.last_seq(d, segs)
        seq = last + 1
        if segs and seq - segs[-1][0] < SEGMENT_MAX_ENTRIES and size < SEGMENT_MAX_BYTES:
            path, new = segs[-1][1], False
        else:
            path, new = d / f"{seq:020d}.jsonl", True
            d.mkdir(parents=True, exist_ok=True)
        streams.append_line(path, seq, value)
        if new:
            fsync_dir(d)
        return seq

    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]:
        k = validate_key(stream, "stream")
        self._check_page(limit, after)
        return await anyio.to_thread.run_sync(self._read_sync, k, after, limit)

    def _read_sync(self, stream: Key, after: int, limit: int) -> list[tuple[int, bytes]]:
        return streams.read_entries(streams.segments(self._stream_dir(stream)), after, limit)

    async def delete_stream(self, stream: Key) -> bool:
        k = validate_key(stream, "stream")
        return await self._locks.run(stripe_of("stream", k), lambda: self._delete_stream_sync(k))

    def _delete_stream_sync(self, stream: Key) -> bool:
        """Remove the entries but keep ``meta.json`` with the last seq, so seqs are never reused."""
        d = self._stream_dir(stream)
        segs = streams.segments(d)
        if not segs:
            return False
        last, size = streams.last_seq(d, segs)
        existed = size > 0 or any(p.stat().st_size > 0 for _, p in segs[:-1])
        meta = {"schema_version": SCHEMA_VERSION, "last_seq": last}
        write_atomic(d / "meta.json", (json.dumps(meta) + "\n").encode())
        for _, path in segs:
            path.unlink(missing_ok=True)
        fsync_dir(d)
        return existed


def _stripes(key: Key, fence: Fence | None) -> int | tuple[int, ...]:
    """The lock stripes of a write of ``key``, with those of ``fence``'s key when fenced."""
    return (
        stripe_of("kv", key)
        if fence is None
        else (stripe_of("kv", key), stripe_of("kv", fence.key))
    )
