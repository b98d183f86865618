"""Lock files of the analysis cache directory: an exclusive ``flock`` per file, released when the
file is closed (so a process that dies releases its locks)."""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import IO


def open_lock(path: Path) -> IO[bytes]:
    """The lock file at ``path`` (created if missing), kept open while its lock is held."""
    return open(path, "a+b")


def try_lock(fh: IO[bytes]) -> bool:
    """Take ``fh``'s exclusive lock if no process holds it now; whether it was taken."""
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
