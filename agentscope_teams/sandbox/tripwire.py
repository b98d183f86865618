"""Stop a sandboxed command when another process removes or replaces a path its mask sits on.

A mask (:class:`~.base.PathMask`) is a mount over a path of the workspace, and Linux lazily
detaches a mount when its path is unlinked or renamed over from another mount namespace: an
editor's atomic save of ``.env`` (write a new file, rename it over), ``rm -rf secrets``, ``mv``
of a parent directory, done on the host while the command runs, would show the new file to the
command. Inside the sandbox the same operations fail (the path is busy), so such a change comes
from outside. :class:`Tripwire` watches (inotify) the directory holding each masked path and each
of its parents up to the workspace, and calls its ``trip`` callback once when one of those names
is removed, renamed or created there (or when events were lost); the bubblewrap backend then
kills the command, saying why (:meth:`~.process.HostProcess.stop`).

This narrows the exposure to the instant between the change and the kill (a command reading the
path in a tight loop may still see the new file), and is skipped where inotify is unavailable.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import select
import struct
import threading
from collections.abc import Callable, Iterable

log = logging.getLogger(__name__)

__all__ = ["Tripwire"]

_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_Q_OVERFLOW = 0x4000
_IN_ONLYDIR = 0x1000000
_IN_DONT_FOLLOW = 0x2000000
_WATCHED = _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
_EVENT = struct.Struct("iIII")


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library with inotify (found once: ``find_library`` runs ``ldconfig``)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        libc.inotify_init1  # noqa: B018 - present on Linux only
    except (OSError, AttributeError, TypeError):
        return None
    return libc


class Tripwire:
    """Watches the masked ``paths`` (absolute, inside ``workspace``) until :meth:`stop`; calls
    ``trip`` with the path that changed, once, from a thread of its own (module docstring)."""

    def __init__(self, paths: Iterable[str], workspace: str, trip: Callable[[str], None]) -> None:
        self._trip = trip
        self._tripped = False
        self._names: dict[int, dict[str, str]] = {}  # watch -> name in it -> the masked path
        self._fd = -1
        self._stop_r, self._stop_w = -1, -1
        self._thread: threading.Thread | None = None
        libc = _libc()
        if libc is None:
            log.debug("inotify is unavailable: masks are not watched")
            return
        self._fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self._fd < 0:
            log.debug("inotify_init1 failed (errno %d): masks are not watched", ctypes.get_errno())
            return
        root = workspace.rstrip("/")
        by_dir: dict[str, dict[str, str]] = {}
        for path in paths:
            step = path
            while step.startswith(root + "/"):
                by_dir.setdefault(os.path.dirname(step), {})[os.path.basename(step)] = path
                step = os.path.dirname(step)
        for directory, names in by_dir.items():
            wd = libc.inotify_add_watch(
                self._fd, os.fsencode(directory), _WATCHED | _IN_ONLYDIR | _IN_DONT_FOLLOW
            )
            if wd < 0:
                log.debug("cannot watch %s (errno %d)", directory, ctypes.get_errno())
                continue
            self._names.setdefault(wd, {}).update(names)
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._watch, name="sandbox-tripwire", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        poller = select.poll()  # not select(): a server's descriptors pass 1024
        poller.register(self._fd, select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if self._stop_r in ready:
                return
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                return
            changed = self._changed(data)
            if changed is not None and not self._tripped:
                self._tripped = True
                self._trip(changed)

    def _changed(self, data: bytes) -> str | None:
        """The masked path one of the events in ``data`` is about, if any."""
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            if mask & _IN_Q_OVERFLOW:
                return "(events were lost)"
            found = self._names.get(wd, {}).get(os.fsdecode(name))
            if found is not None and mask & _WATCHED:
                return found
        return None

    def stop(self) -> None:
        """Stop watching (idempotent)."""
        if self._thread is not None:
            os.write(self._stop_w, b"x")
            if self._thread is not threading.current_thread():
                self._thread.join()
            self._thread = None
            os.close(self._stop_r)
            os.close(self._stop_w)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
