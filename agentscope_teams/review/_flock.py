"""Files of the analysis cache directory: lock files (an exclusive ``flock`` per file, released
when the file is closed, so a process that dies releases its locks) and private files.

Every file here is opened with ``O_NOFOLLOW`` (a symbolic link planted at its name fails with
``OSError`` instead of being followed) and created ``0600``; :func:`unsafe_directory` says why a
directory must not hold the cache at all (see :mod:`.cache`).
"""

from __future__ import annotations

import fcntl
import os
import secrets
import stat
from pathlib import Path
from typing import IO

_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
PRIVATE = 0o600


def open_lock(path: Path) -> IO[bytes]:
    """The lock file at ``path`` (created ``0600`` if missing), kept open while its lock is held."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, PRIVATE)
    return os.fdopen(fd, "r+b")


def try_lock(fh: IO[bytes]) -> bool:
    """Take ``fh``'s exclusive lock if no process holds it now; whether it was taken."""
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def read_private(path: Path) -> bytes:
    """The bytes of the regular file at ``path``, never through a symbolic link."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        return fh.read()


def write_private(path: Path, data: bytes) -> None:
    """Replace ``path`` atomically with ``data``, mode ``0600``: a fresh temporary file (never an
    existing one) renamed over it; a symbolic link at ``path`` is replaced, not written through."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, PRIVATE)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def append_private(path: Path, line: str) -> None:
    """Append ``line`` to ``path`` (created ``0600``), never through a symbolic link."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, PRIVATE)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(line)


def unsafe_directory(directory: Path) -> str | None:
    """Create ``directory`` (``0700``) if missing; why another user could plant or read files
    in it, or None when only this user can: it (and a link naming it) must belong to this
    process's user and be writable by nobody else."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    me = os.geteuid()
    link, target = os.lstat(directory), os.stat(directory)
    if not stat.S_ISDIR(target.st_mode):
        return "it is not a directory"
    for what, st in (("the directory", target), ("the link to it", link)):
        if st.st_uid != me:
            return f"{what} belongs to user id {st.st_uid}, not to this user ({me})"
    if target.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"it is writable by its group or by everyone (mode {stat.S_IMODE(target.st_mode):o})"
    return None
