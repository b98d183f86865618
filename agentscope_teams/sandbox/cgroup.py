"""A pids cgroup per command, for a process running as root.

``RLIMIT_NPROC`` does not bind processes whose real uid is 0 on the host (the kernel exempts the
root user), and a sandbox started by root keeps host uid 0 inside its user namespace. So when the
service runs as root, the bubblewrap backend bounds the process count with the ``pids``
controller instead: a fresh cgroup below this process's own, with ``pids.max`` set, which the
launcher enters before it executes bubblewrap (every descendant is born inside it).
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from pathlib import Path

_PREFIX = "agentscope-sandbox-"


def _mounts() -> list[tuple[str, str, str, str]]:
    """(root, mount point, fs type, super options) of every cgroup mount."""
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                found.append((fields[3], fields[4], tail[0], tail[2]))
    return found


def _own_dirs() -> list[Path]:
    """Directories of this process's pids cgroup (v1 hierarchy, or v2 with pids delegated)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    mounts = _mounts()
    dirs: list[Path] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        v2 = controllers == ""
        if not v2 and "pids" not in controllers.split(","):
            continue
        for root, point, fstype, options in mounts:
            if v2 != (fstype == "cgroup2") or (not v2 and "pids" not in options.split(",")):
                continue
            rel = os.path.relpath(path, root) if path.startswith(root) else path.lstrip("/")
            here = Path(point) / ("" if rel == "." else rel)
            if v2 and "pids" not in _read(here / "cgroup.subtree_control").split():
                continue
            dirs.append(here)
    return dirs


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def pids_parent() -> Path | None:
    """Where this process may create pids cgroups, or None (not root, or nothing writable)."""
    if os.geteuid() != 0:
        return None
    for here in _own_dirs():
        if os.access(here, os.W_OK) and (here / "cgroup.procs").exists():
            return here
    return None


class PidsCgroup:
    """One command's cgroup: made with :meth:`create`, entered by the launcher through
    :attr:`procs`, removed by :meth:`remove` once its processes are gone."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.procs = path / "cgroup.procs"

    @classmethod
    def create(cls, parent: Path, max_pids: int) -> PidsCgroup:
        _sweep()
        path = parent / f"{_PREFIX}{uuid.uuid4().hex[:16]}"
        path.mkdir()
        try:
            (path / "pids.max").write_text(str(max_pids))
        except OSError:
            path.rmdir()
            raise
        return cls(path)

    def remove(self) -> None:
        """Remove the cgroup. Its killed processes may take a moment to leave: after a few quick
        tries it is left for the next :meth:`create` to remove."""
        for _ in range(10):
            if _rmdir(self.path):
                return
            time.sleep(0.005)
        _leftover.add(self.path)


_leftover: set[Path] = set()
"""Cgroups whose processes had not left yet when they were removed."""


def _rmdir(path: Path) -> bool:
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _sweep() -> None:
    for path in list(_leftover):
        if _rmdir(path):
            _leftover.discard(path)
