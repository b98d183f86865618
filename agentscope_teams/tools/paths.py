"""Workspace confinement for file tools: path resolution, directory walks and glob matching.

Every path is resolved with :func:`os.path.realpath` (``..`` and symlinks included) and refused with
a :class:`ToolError` if the result is not inside the workspace root. Walks never follow directory
symlinks and skip file symlinks that point outside the root.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
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


def replace_file(real: Path, text: str) -> None:
    """Write ``text`` to the existing file ``real`` through a new temporary file beside it,
    renamed over it (keeping its mode). The temporary name is created exclusively, so a symlink
    planted at some name in the directory is never written through."""
    fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    try:
        with open(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            os.fchmod(fh.fileno(), stat.S_IMODE(real.stat().st_mode))
        os.replace(tmp, real)
    finally:
        Path(tmp).unlink(missing_ok=True)


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
    for dirpath, dirnames, filenames in os.walk(base):
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
