"""``JsonFileStore``: the embedded default store, one human-readable JSON file per key.

Layout under ``root`` (every name is built from :func:`encode_segment`, so no key escapes ``root``)::

    kv/<seg>/<seg>/<last>.json           one file per key: key, version, expires_at, value
    streams/<seg>/<last>.stream/         one directory per stream
        00000000000000000001.jsonl       segment files named by their first seq, one entry a line
        meta.json                        the highest seq ever handed out, written by delete_stream
    locks/<nn>.lock                      fcntl.flock lock files, one per stripe

* Directory names ending in ``.json`` or ``.stream`` get a ``#`` appended, so the file of key
  ``(a, b)`` (``a/b.json``) never collides with the directory of key ``(a, "b.json", c)``. Encoded
  segments over 200 bytes become ``<first 150 bytes>#<sha256 prefix>``; the JSON file holds the real
  key, so listing stays exact. ``#`` never occurs in an encoded segment, so these names are unique.
* Writes go to ``<name>#.tmp`` in the same directory, are fsynced, then ``os.replace``-d over the
  target and the directory is fsynced: readers see the old or the new file, never a torn one.
* Conditional writes and seq allocation run under an ``fcntl.flock`` on one of 64 lock files picked by
  a stable hash of the key (striped locks: bounded lock files, little false sharing). The lock file is
  opened afresh for every operation, so two threads of one process exclude each other too; an
  in-process ``anyio.Lock`` per stripe keeps waiting coroutines off the worker threads.
* A stream line is only valid once its trailing newline is on disk; readers ignore a partial last line
  and the next ``append`` truncates it (a SIGKILL mid-append loses only that unreturned entry).
* Expired entries are skipped by readers and overwritten or removed by the next write or delete.

Safe for several processes on one host (local file system with ``flock``), not across hosts.
"""

from __future__ import annotations

import base64
import bisect
import contextlib
import fcntl
import hashlib
import json
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, TypeVar

import anyio
import anyio.to_thread

from ..errors import ConfigurationError, SchemaVersionError, StoreError, VersionConflict
from .base import (
    DEFAULT_MAX_VALUE_BYTES,
    Entry,
    Key,
    StoreBase,
    check_expected,
    encode_key,
    encode_prefix,
    encode_segment,
    validate_key,
    validate_prefix,
)

T = TypeVar("T")

SCHEMA_VERSION = 1
LOCK_STRIPES = 64  # part of the on-disk format: every process must agree on it
SEGMENT_MAX_ENTRIES = 1000
SEGMENT_MAX_BYTES = 8 * 1024 * 1024
_NAME_MAX_BYTES = 200  # encoded segments longer than this are truncated and hashed
_NAME_KEEP_BYTES = 150
_SUFFIXES = (".json", ".stream")
_LINE_HEAD = b'{"seq": '

# Lock descriptors open right now, guarded against fork(): a child made by a bare fork() (the
# multiprocessing default on Linux) closes its copies, else it would keep the lock until it exits.
# os.open's O_CLOEXEC already covers fork + exec.
_HELD_LOCK_FDS: set[int] = set()
_FD_GUARD = threading.Lock()


def _open_lock_fd(path: Path) -> int:
    with _FD_GUARD:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        _HELD_LOCK_FDS.add(fd)
        return fd


def _close_lock_fd(fd: int) -> None:
    """Closing the last descriptor of the open file releases the ``flock``."""
    with _FD_GUARD:
        _HELD_LOCK_FDS.discard(fd)
        os.close(fd)


def _close_inherited_locks() -> None:
    for fd in _HELD_LOCK_FDS:
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD_LOCK_FDS.clear()
    _FD_GUARD.release()


os.register_at_fork(
    before=_FD_GUARD.acquire,
    after_in_parent=_FD_GUARD.release,
    after_in_child=_close_inherited_locks,
)


# ----------------------------------------------------------------------------- names and records


def _base_name(segment: str) -> str:
    """The encoded segment, or a truncated prefix plus a hash when it is too long for a file name."""
    enc = encode_segment(segment)
    raw = enc.encode()
    if len(raw) <= _NAME_MAX_BYTES:
        return enc
    head = raw[:_NAME_KEEP_BYTES].decode("utf-8", "ignore")
    return f"{head}#{hashlib.sha256(raw).hexdigest()[:32]}"


def _dir_name(segment: str) -> str:
    base = _base_name(segment)
    return base + "#" if base.endswith(_SUFFIXES) else base


def _name_segment(name: str) -> str | None:
    """The encoded segment behind a directory name or file stem; ``None`` when it was hashed."""
    if name.endswith("#"):
        return name[:-1]
    return None if "#" in name else name


class _Header(NamedTuple):
    key: Key
    version: int
    expires_at: float | None

    def live(self, now: float) -> bool:
        return self.expires_at is None or self.expires_at > now


def _payload(value: bytes) -> tuple[str, str]:
    """``("text", JSON string)`` when the value is UTF-8, else ``("b64", JSON string)``."""
    try:
        return "text", json.dumps(value.decode("utf-8"), ensure_ascii=False)
    except UnicodeDecodeError:
        return "b64", '"' + base64.b64encode(value).decode("ascii") + '"'  # nothing to escape


def _value_of(data: dict[str, Any], where: Path) -> bytes:
    if isinstance(data.get("text"), str):
        return data["text"].encode("utf-8")  # type: ignore[no-any-return]
    if isinstance(data.get("b64"), str):
        return base64.b64decode(data["b64"], validate=True)
    raise StoreError(f"{where}: record has neither 'text' nor 'b64'; restore or delete the file")


def _render(key: Key, version: int, expires_at: float | None, value: bytes) -> bytes:
    """A key file: standard JSON, one field a line, the (possibly huge) value last."""
    field, payload = _payload(value)
    lines = [
        f'  "schema_version": {SCHEMA_VERSION}',
        f'  "key": {json.dumps(list(key), ensure_ascii=False)}',
        f'  "version": {version}',
        f'  "expires_at": {json.dumps(expires_at)}',
        f'  "{field}": {payload}',
    ]
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode("utf-8")


def _render_line(seq: int, value: bytes) -> bytes:
    """One stream line, ``{"seq": n, "text": ...}``; JSON escapes every newline inside it."""
    field, payload = _payload(value)
    return f'{{"seq": {seq}, "{field}": {payload}}}\n'.encode()


def _check_schema(data: Any, where: Path) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise StoreError(f"{where}: expected a JSON object; restore or delete the file")
    found = data.get("schema_version", SCHEMA_VERSION)
    if not isinstance(found, int) or found > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{where}: schema_version {found!r} is newer than {SCHEMA_VERSION}; "
            "upgrade agentscope-teams"
        )
    return data


def _header_of(data: dict[str, Any], where: Path) -> _Header:
    try:
        key = validate_key(data["key"])
        version, expires = data["version"], data["expires_at"]
        if not isinstance(version, int) or not isinstance(expires, int | float | None):
            raise TypeError("bad version or expires_at")
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"{where}: malformed record ({exc}); restore or delete the file") from exc
    return _Header(key, version, None if expires is None else float(expires))


def _parse(raw: bytes, where: Path) -> dict[str, Any]:
    try:
        return _check_schema(json.loads(raw), where)
    except ValueError as exc:
        raise StoreError(f"{where}: not valid JSON ({exc}); restore or delete the file") from exc


def _read_header(path: Path) -> _Header | None:
    """The header of a key file without parsing its value; ``None`` when the file is absent."""
    try:
        f = path.open("rb")
    except FileNotFoundError:
        return None
    with f:
        lines = [f.readline() for _ in range(5)]
        if lines[0] == b"{\n" and all(line.endswith(b",\n") for line in lines[1:]):
            try:
                data = _check_schema(json.loads(b"{" + b"".join(lines[1:])[:-2] + b"}"), path)
                return _header_of(data, path)
            except (ValueError, StoreError):
                pass  # hand-edited layout: fall back to parsing the whole file
        f.seek(0)
        return _header_of(_parse(f.read(), path), path)


def _line_seq(line: bytes, where: Path) -> int:
    if line.startswith(_LINE_HEAD):
        end = line.find(b",", len(_LINE_HEAD))
        if end > 0 and line[len(_LINE_HEAD) : end].isdigit():
            return int(line[len(_LINE_HEAD) : end])
    seq = _parse(line, where).get("seq")
    if not isinstance(seq, int):
        raise StoreError(f"{where}: stream line without an integer 'seq'; restore or delete it")
    return seq


# ----------------------------------------------------------------------------- low-level file I/O


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a fsynced temp file and ``os.replace``; the caller holds the lock."""
    tmp = path.with_name(path.name + "#.tmp")
    for _ in range(100):  # a concurrent delete may remove an empty parent directory meanwhile
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            break
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
    else:
        raise StoreError(f"cannot create {tmp}: its directory keeps disappearing")
    with open(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _rfind_newline(f: BinaryIO, end: int) -> int:
    """Offset of the last ``\\n`` before ``end`` in binary file ``f``, or -1."""
    pos = end
    while pos > 0:
        start = max(0, pos - 65536)
        f.seek(start)
        i = f.read(pos - start).rfind(b"\n")
        if i >= 0:
            return start + i
        pos = start
    return -1


def _repair_tail(path: Path) -> tuple[int, bytes | None]:
    """Drop a partial last line left by a crash; return the size and the last complete line."""
    with path.open("r+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return 0, None
        f.seek(size - 1)
        if f.read(1) != b"\n":
            size = _rfind_newline(f, size) + 1
            f.truncate(size)
            f.flush()
            os.fsync(f.fileno())
            if size == 0:
                return 0, None
        start = _rfind_newline(f, size - 1) + 1
        f.seek(start)
        return size, f.read(size - start)


# ----------------------------------------------------------------------------- the store


class JsonFileStore(StoreBase):
    """Key-value entries and streams as JSON files under ``root``, shared by processes on one host.

    ``lock_timeout`` bounds how long an operation waits for a key's lock before raising
    :class:`~agentscope_teams.errors.StoreError`. Use one instance from one event loop at a time.
    """

    shared_across_processes = True
    shared_across_hosts = False

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
        self.lock_timeout = lock_timeout
        self._kv = self.root / "kv"
        self._streams = self.root / "streams"
        self._lock_dir = self.root / "locks"
        self._locks: dict[int, anyio.Lock] = {}

    def __repr__(self) -> str:
        return f"JsonFileStore({str(self.root)!r})"

    async def setup(self) -> None:
        """Create the directories under ``root``. Idempotent; other operations also create lazily."""
        await anyio.to_thread.run_sync(self._setup_sync)

    def _setup_sync(self) -> None:
        if self.root.exists() and not self.root.is_dir():
            raise ConfigurationError(f"file store root {self.root} is not a directory")
        try:
            for d in (self._kv, self._streams, self._lock_dir):
                d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot create the file store under {self.root}: {exc}"
            ) from exc

    # ------------------------------------------------------------------------- locking

    @staticmethod
    def _stripe(namespace: str, key: Key) -> int:
        return zlib.crc32(f"{namespace}\0{encode_key(key)}".encode()) % LOCK_STRIPES

    async def _locked(self, stripe: int, fn: Callable[[], T]) -> T:
        """Run ``fn`` in a worker thread holding the stripe's in-process lock and its file lock."""
        deadline = time.monotonic() + self.lock_timeout
        lock = self._locks.get(stripe)
        if lock is None:
            lock = self._locks[stripe] = anyio.Lock()
        with anyio.move_on_after(self.lock_timeout) as scope:
            await lock.acquire()
        if scope.cancelled_caught:
            raise self._timeout_error(stripe)
        try:
            return await anyio.to_thread.run_sync(self._run_flocked, stripe, deadline, fn)
        finally:
            lock.release()

    def _run_flocked(self, stripe: int, deadline: float, fn: Callable[[], T]) -> T:
        with self._flock(stripe, deadline):
            return fn()

    @contextmanager
    def _flock(self, stripe: int, deadline: float) -> Iterator[None]:
        """Exclusive ``flock`` on a freshly opened lock file; polled so ``lock_timeout`` applies."""
        fd = _open_lock_fd(self._lock_dir / f"{stripe:02d}.lock")
        try:
            delay = 0.0002
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise self._timeout_error(stripe) from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.005)
            yield
        finally:
            _close_lock_fd(fd)

    def _timeout_error(self, stripe: int) -> StoreError:
        return StoreError(
            f"timed out after {self.lock_timeout}s waiting for lock "
            f"{self._lock_dir / f'{stripe:02d}.lock'}; another process holds it, "
            "retry or raise lock_timeout"
        )

    # ------------------------------------------------------------------------- keys

    def _key_path(self, key: Key) -> Path:
        return self._kv.joinpath(*map(_dir_name, key[:-1]), _base_name(key[-1]) + ".json")

    def _header(self, path: Path, key: Key) -> _Header | None:
        head = _read_header(path)
        if head is not None and head.key != key:
            raise StoreError(f"{path} holds key {head.key!r}, not {key!r}; the file was moved")
        return head

    async def get(self, key: Key) -> Entry | None:
        k = validate_key(key)
        return await anyio.to_thread.run_sync(self._get_sync, k)

    def _get_sync(self, key: Key) -> Entry | None:
        path = self._key_path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        data = _parse(raw, path)
        head = _header_of(data, path)
        if head.key != key:
            raise StoreError(f"{path} holds key {head.key!r}, not {key!r}; the file was moved")
        return Entry(_value_of(data, path), head.version) if head.live(time.time()) else None

    async def put(
        self,
        key: Key,
        value: bytes,
        *,
        expected_version: int | None = None,
        ttl: float | None = None,
    ) -> int:
        k = self._check_put(key, value, expected_version, ttl)
        data = bytes(value)
        return await self._locked(
            self._stripe("kv", k), lambda: self._put_sync(k, data, expected_version, ttl)
        )

    def _put_sync(self, key: Key, value: bytes, expected: int | None, ttl: float | None) -> int:
        path = self._key_path(key)
        head = self._header(path, key)
        found = head.version if head is not None and head.live(time.time()) else 0
        if expected is not None and expected != found:
            raise VersionConflict(key, expected, found)
        expires = None if ttl is None else time.time() + ttl
        _write_atomic(path, _render(key, found + 1, expires, value))
        return found + 1

    async def delete(self, key: Key, *, expected_version: int | None = None) -> bool:
        k = validate_key(key)
        check_expected(expected_version)
        return await self._locked(
            self._stripe("kv", k), lambda: self._delete_sync(k, expected_version)
        )

    def _delete_sync(self, key: Key, expected: int | None) -> bool:
        path = self._key_path(key)
        head = self._header(path, key)
        live = head is not None and head.live(time.time())
        found = head.version if head is not None and live else 0
        if expected is not None and expected != found:
            raise VersionConflict(key, expected, found)
        if head is None:
            return False
        path.unlink(missing_ok=True)
        _fsync_dir(path.parent)
        self._prune_dirs(path.parent)
        return live

    def _prune_dirs(self, d: Path) -> None:
        """Remove now-empty directories up to ``kv/``; a non-empty one stops the walk."""
        while d != self._kv and d.is_relative_to(self._kv):
            try:
                d.rmdir()
            except OSError:
                return
            d = d.parent

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        self._check_page(limit)
        p = validate_prefix(prefix)
        start = None if after is None else encode_key(validate_key(after, "after"))
        return await anyio.to_thread.run_sync(self._list_sync, p, limit, start)

    def _list_sync(self, prefix: Key, limit: int, after: str | None) -> list[Key]:
        out: list[Key] = []
        d = self._kv.joinpath(*map(_dir_name, prefix))
        self._walk(d, encode_prefix(prefix), len(prefix), after, limit, out)
        return out

    def _walk(
        self, d: Path, enc: str, depth: int, after: str | None, limit: int, out: list[Key]
    ) -> None:
        """Append live keys under ``d`` (encoded prefix ``enc``) to ``out`` in encoding order."""
        now = time.time()
        for sort_key, path, is_dir in self._entries(d, enc, depth):
            if len(out) >= limit:
                return
            if is_dir:
                # Every key below starts with ``sort_key``; skip the group if all precede ``after``.
                if after is None or after < sort_key or after.startswith(sort_key):
                    self._walk(path, sort_key, depth + 1, after, limit, out)
            elif after is None or sort_key > after:
                head = _read_header(path)
                if head is not None and encode_key(head.key) != sort_key:
                    raise StoreError(f"{path} holds key {head.key!r}; the file was moved")
                if head is not None and head.live(now):
                    out.append(head.key)

    def _entries(self, d: Path, enc: str, depth: int) -> list[tuple[str, Path, bool]]:
        """``(sort key, path, is_dir)`` for one directory; a directory sorts as ``enc + seg + '/'``."""
        try:
            scanned = list(os.scandir(d))
        except (FileNotFoundError, NotADirectoryError):
            return []
        items: list[tuple[str, Path, bool]] = []
        for entry in scanned:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                seg = _name_segment(entry.name)
                seg = seg if seg is not None else self._hashed_dir_segment(path, depth)
                if seg is not None:
                    items.append((f"{enc}{seg}/", path, True))
            elif entry.name.endswith(".json"):
                seg = _name_segment(entry.name[:-5])
                if seg is None:
                    head = _read_header(path)
                    ok = head is not None and len(head.key) == depth + 1
                    seg = encode_segment(head.key[depth]) if head is not None and ok else None
                if seg is not None:
                    items.append((enc + seg, path, False))
        items.sort()
        return items

    @staticmethod
    def _hashed_dir_segment(d: Path, depth: int) -> str | None:
        """The real encoded segment of a hashed directory name, from any key file below it."""
        for dirpath, _dirs, files in os.walk(d):
            for name in files:
                if name.endswith(".json"):
                    head = _read_header(Path(dirpath) / name)
                    if head is not None and len(head.key) > depth:
                        return encode_segment(head.key[depth])
        return None

    # ------------------------------------------------------------------------- streams

    def _stream_dir(self, stream: Key) -> Path:
        return self._streams.joinpath(
            *map(_dir_name, stream[:-1]), _base_name(stream[-1]) + ".stream"
        )

    @staticmethod
    def _segments(d: Path) -> list[tuple[int, Path]]:
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            return []
        segs = [(int(n[:-6]), d / n) for n in names if n.endswith(".jsonl") and n[:-6].isdigit()]
        return sorted(segs)

    @staticmethod
    def _meta_seq(d: Path) -> int:
        try:
            raw = (d / "meta.json").read_bytes()
        except FileNotFoundError:
            return 0
        seq = _parse(raw, d / "meta.json").get("last_seq", 0)
        return seq if isinstance(seq, int) else 0

    def _last_seq(self, d: Path, segs: list[tuple[int, Path]]) -> tuple[int, int]:
        """Highest seq ever handed out and the size of the last segment (after repairing it)."""
        if not segs:
            return self._meta_seq(d), 0
        first, path = segs[-1]
        size, line = _repair_tail(path)
        last = first - 1 if line is None else _line_seq(line, path)
        return max(last, self._meta_seq(d)), size

    async def append(self, stream: Key, value: bytes) -> int:
        k = self._check_append(stream, value)
        data = bytes(value)
        return await self._locked(self._stripe("stream", k), lambda: self._append_sync(k, data))

    def _append_sync(self, stream: Key, value: bytes) -> int:
        d = self._stream_dir(stream)
        segs = self._segments(d)
        last, size = self._last_seq(d, segs)
        seq = last + 1
        if segs and seq - segs[-1][0] < SEGMENT_MAX_ENTRIES and size < SEGMENT_MAX_BYTES:
            path, new = segs[-1][1], False
        else:
            path, new = d / f"{seq:020d}.jsonl", True
            d.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        with open(fd, "ab") as f:
            f.write(_render_line(seq, value))
            f.flush()
            os.fsync(f.fileno())
        if new:
            _fsync_dir(d)
        return seq

    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]:
        k = validate_key(stream, "stream")
        self._check_page(limit, after)
        return await anyio.to_thread.run_sync(self._read_sync, k, after, limit)

    def _read_sync(self, stream: Key, after: int, limit: int) -> list[tuple[int, bytes]]:
        segs = self._segments(self._stream_dir(stream))
        # Segments before the last one starting at or below after + 1 hold only seqs <= after.
        i = max(bisect.bisect_right([first for first, _ in segs], after + 1) - 1, 0)
        out: list[tuple[int, bytes]] = []
        for _, path in segs[i:]:
            try:
                f = path.open("rb")
            except FileNotFoundError:
                continue  # removed by a concurrent delete_stream
            with f:
                for line in f:
                    if not line.endswith(b"\n"):
                        break  # an append in progress (or a crashed one): not an entry yet
                    if _line_seq(line, path) > after:
                        data = _parse(line, path)
                        out.append((int(data["seq"]), _value_of(data, path)))
                        if len(out) >= limit:
                            return out
        return out

    async def delete_stream(self, stream: Key) -> bool:
        k = validate_key(stream, "stream")
        return await self._locked(self._stripe("stream", k), lambda: self._delete_stream_sync(k))

    def _delete_stream_sync(self, stream: Key) -> bool:
        """Remove the entries but keep ``meta.json`` with the last seq, so seqs are never reused."""
        d = self._stream_dir(stream)
        segs = self._segments(d)
        if not segs:
            return False
        last, size = self._last_seq(d, segs)
        existed = size > 0 or any(p.stat().st_size > 0 for _, p in segs[:-1])
        meta = {"schema_version": SCHEMA_VERSION, "last_seq": last}
        _write_atomic(d / "meta.json", (json.dumps(meta) + "\n").encode())
        for _, path in segs:
            path.unlink(missing_ok=True)
        _fsync_dir(d)
        return existed
