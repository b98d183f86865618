"""Workspace confinement for file tools: path resolution, directory walks and glob matching.

Every path is resolved with :func:`os.path.realpath` (``..`` and symlinks included) and refused with
a :class:`ToolError` if the result is not inside the workspace root. The real path checked is then
opened from the root one component at a time without following symlinks (:func:`open_in`), so a
command running beside the call cannot swap a checked directory for a symlink and lead the open
outside. Walks never follow directory symlinks and skip file symlinks that point outside the root.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import ToolError

IGNORED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)
"""Directories glob and grep do not descend into unless the pattern names them."""


def is_inside(root: Path, real: Path) -> bool:
    return real == root or real.is_relative_to(root)


def resolve_in_workspace(root: Path, path: str) -> Path:
    """The real path of ``path`` (relative to ``root``, or absolute); ToolError if it escapes ``root``.

    ``root`` must already be resolved (``ToolEnv.workspace`` is).
    """
    if "\x00" in path:
        raise ToolError(f"path {path!r} contains a NUL character")
    candidate = Path(path) if os.path.isabs(path) else root / (path or ".")
    try:
        real = Path(os.path.realpath(candidate))
    except (OSError, ValueError) as exc:
        raise ToolError(f"cannot resolve path {path!r}: {exc}") from None
    if not is_inside(root, real):
        raise ToolError(
            f"path {path!r} is outside the workspace; only files inside the workspace root can be "
            "used: pass a path relative to it"
        )
    return real


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _moved(root: Path, real: Path, part: str) -> ToolError:
    return ToolError(
        f"{display(root, real)}: {part!r} on its path is not a directory of the workspace (a file, "
        "or replaced by a symlink since the path was checked); refused so as not to leave the "
        "workspace: check the path with list_files and call again"
    )


@contextlib.contextmanager
def parent_of(root: Path, real: Path, *, make: bool = False) -> Iterator[tuple[int, str]]:
    """``(fd, name)``: the directory holding ``real`` (a path :func:`resolve_in_workspace`
    returned, not ``root`` itself) and ``real``'s name in it. The directory is opened from
    ``root`` one component at a time, never following a symlink, so one swapped in since the check
    cannot lead outside ``root`` (a ToolError instead). ``make`` creates missing directories."""
    *dirs, name = real.relative_to(root).parts
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in dirs:
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
            try:
                step = os.open(part, _DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _moved(root, real, part) from None
                raise
            os.close(fd)
            fd = step
        yield fd, name
    finally:
        os.close(fd)


def open_in(root: Path, real: Path, flags: int, *, make: bool = False) -> int:
    """A file descriptor of ``real`` (see :func:`parent_of`; ``root`` itself is opened as is),
    opened with ``flags`` without following a symlink at any component."""
    if real == root:
        return os.open(root, flags | os.O_CLOEXEC)
    with parent_of(root, real, make=make) as (dir_fd, name):
        try:
            return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ToolError(
                    f"{display(root, real)} was replaced by a symlink since the path was checked; "
                    "refused so as not to leave the workspace: check the path and call again"
                ) from None
            raise


def open_regular(root: Path, real: Path, flags: int = os.O_RDONLY) -> int:
    """:func:`open_in` for a regular file that exists (never blocking on a FIFO), with a
    ToolError naming the path when it is missing, a directory or something else."""
    shown = display(root, real)
    try:
        fd = open_in(root, real, flags | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ToolError(
            f"{shown} does not exist; use list_files or glob_files to find the path"
        ) from None
    except IsADirectoryError:
        raise ToolError(f"{shown} is a directory; use list_files to see what it contains") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads, a socket
            raise ToolError(f"{shown} is not a regular file") from None
        raise ToolError(f"cannot open {shown}: {exc.strerror}") from None
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        if stat.S_ISDIR(kind):
            raise ToolError(f"{shown} is a directory; use list_files to see what it contains")
        raise ToolError(f"{shown} is not a regular file")
    return fd


def replace_file(root: Path, real: Path, text: str) -> None:
    """Write ``text`` to the existing file ``real`` through a new temporary file beside it,
    renamed over it (keeping its mode). Both names are used relative to the directory opened by
    :func:`parent_of` and the temporary name is created exclusively, so neither a symlink planted
    at some name in the directory nor one swapped in for a directory is written through."""
    with parent_of(root, real) as (dir_fd, name):
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        if not stat.S_ISREG(mode):
            raise ToolError(f"{display(root, real)} is not a regular file; it was not changed")
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
        try:
            with open(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
                os.fchmod(fh.fileno(), stat.S_IMODE(mode))
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dir_fd)


def display(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` in POSIX form (``"."`` for the root itself)."""
    rel = path.relative_to(root).as_posix()
    return rel if rel else "."


def walk_files(
    root: Path,
    base: Path,
    keep: frozenset[str] = frozenset(),
    hidden: Callable[[str], object] | None = None,
) -> Iterator[Path]:
    """Files under ``base`` in sorted order (``base`` itself if it is a file).

    Directory symlinks are not followed, file symlinks pointing outside ``root`` are skipped and
    :data:`IGNORED_DIRS` are pruned unless their name is in ``keep``. ``hidden`` (given a path
    relative to ``root``, true to leave it out: a ``Read`` deny rule) prunes directories and
    skips files.
    """
    if base.is_file():
        yield base
        return
    try:
        fd = open_in(root, base, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # not a directory (a FIFO), or gone: nothing to walk
        return
    try:  # fwalk: from the opened directory down, never through a directory swapped for a link
        for top, dirnames, filenames, _ in os.fwalk(".", dir_fd=fd):
            yield from _walked(root, Path(base, top), dirnames, filenames, keep, hidden)
    finally:
        os.close(fd)


def _walked(
    root: Path,
    dirpath: Path,
    dirnames: list[str],
    filenames: list[str],
    keep: frozenset[str],
    hidden: Callable[[str], object] | None,
) -> Iterator[Path]:
    """One directory of :func:`walk_files`: prunes ``dirnames`` in place, yields its files."""
    dirnames[:] = sorted(
        d
        for d in dirnames
        if (d not in IGNORED_DIRS or d in keep)
        and not (hidden and hidden(display(root, Path(dirpath, d))))
    )
    for name in sorted(filenames):
        p = Path(dirpath, name)
        if p.is_symlink() and not is_inside(root, Path(os.path.realpath(p))):
            continue
        if hidden and hidden(display(root, p)):
            continue
        yield p


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (j := pattern.find("]", i + 2)) != -1:
            inner = pattern[i + 1 : j].replace("\\", "\\\\")
            out.append("[" + ("^" + inner[1:] if inner.startswith("!") else inner) + "]")
            i = j + 1
            continue
        elif c == "{" and (j := pattern.find("}", i)) != -1:
            alternatives = pattern[i + 1 : j].split(",")
            out.append("(?:" + "|".join(_translate(a) for a in alternatives) + ")")
            i = j + 1
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching relative POSIX paths against a glob: ``*`` and ``?`` stay inside one path
    component, ``**`` spans directories, ``[abc]`` / ``[!abc]`` classes and ``{a,b}`` alternatives."""
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise ToolError(
            f"glob pattern {pattern!r} must be relative and must not contain '..'; "
            "pass the directory to search as `path`"
        )
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return re.compile(_translate(pattern), re.DOTALL)


def is_binary(head: bytes) -> bool:
    """True if the first bytes of a file look binary (contain a NUL byte)."""
    return b"\x00" in head
