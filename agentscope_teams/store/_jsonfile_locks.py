"""Striped ``fcntl.flock`` locks of :class:`~agentscope_teams.store.jsonfile.JsonFileStore`.

Conditional writes and seq allocation run under an ``fcntl.flock`` on one of :data:`LOCK_STRIPES` lock
files picked by a stable hash of the key (bounded lock files, little false sharing). The lock file is
opened afresh for every operation, so two threads of one process exclude each other too; an
in-process ``anyio.Lock`` per stripe keeps waiting coroutines off the worker threads.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread

from ..errors import StoreError
from .base import Key, encode_key

T = TypeVar("T")

LOCK_STRIPES = 64  # part of the on-disk format: every process must agree on it

# Lock descriptors open right now (the stripes', the usage documents'), guarded against fork(): a
# child made by a bare fork() (the multiprocessing default on Linux) closes its copies, else it
# would keep the lock until it exits. os.open's O_CLOEXEC already covers fork + exec.
_HELD_LOCK_FDS: set[int] = set()
_FD_GUARD = threading.Lock()


def open_lock_fd(path: Path) -> int:
    with _FD_GUARD:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        _HELD_LOCK_FDS.add(fd)
        return fd


def close_lock_fd(fd: int) -> None:
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


def stripe_of(namespace: str, key: Key) -> int:
    """The lock stripe of ``key`` in ``namespace`` (``kv`` or ``stream``)."""
    return zlib.crc32(f"{namespace}\0{encode_key(key)}".encode()) % LOCK_STRIPES


class StripeLocks:
    """The lock files ``<lock_dir>/<nn>.lock``; waiting for one is bounded by ``timeout`` seconds."""

    def __init__(self, lock_dir: Path, timeout: float) -> None:
        self.lock_dir = lock_dir
        self.timeout = timeout
        self._locks: dict[int, anyio.Lock] = {}

    async def run(self, stripe: int | tuple[int, ...], fn: Callable[[], T]) -> T:
        """Run ``fn`` in a worker thread holding the stripes' in-process locks and file locks.

        Several stripes (a fenced write touches two keys) are taken in ascending order, the same
        order everywhere, so two operations never wait on each other in a cycle.
        """
        stripes = (stripe,) if isinstance(stripe, int) else tuple(sorted(set(stripe)))
        deadline = time.monotonic() + self.timeout
        held: list[anyio.Lock] = []
        try:
            with anyio.move_on_after(self.timeout) as scope:
                for s in stripes:
                    lock = self._locks.get(s)
                    if lock is None:
                        lock = self._locks[s] = anyio.Lock()
                    await lock.acquire()
                    held.append(lock)
            if scope.cancelled_caught:
                raise self._timeout_error(stripes[len(held)])
            return await anyio.to_thread.run_sync(self._run_flocked, stripes, deadline, fn)
        finally:
            for lock in reversed(held):
                lock.release()

    def _run_flocked(self, stripes: tuple[int, ...], deadline: float, fn: Callable[[], T]) -> T:
        with contextlib.ExitStack() as stack:
            for s in stripes:
                stack.enter_context(self.flock(s, deadline))
            return fn()

    @contextmanager
    def flock(self, stripe: int, deadline: float) -> Iterator[None]:
        """Exclusive ``flock`` on a freshly opened lock file; polled so the timeout applies."""
        fd = open_lock_fd(self.lock_dir / f"{stripe:02d}.lock")
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
            close_lock_fd(fd)

    def _timeout_error(self, stripe: int) -> StoreError:
        return StoreError(
            f"timed out after {self.timeout}s waiting for lock "
            f"{self.lock_dir / f'{stripe:02d}.lock'}; another process holds it, "
            "retry or raise lock_timeout",
            public=f"the file store stayed locked for {self.timeout}s; retry",
        )
