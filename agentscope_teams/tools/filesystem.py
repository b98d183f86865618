"""Built-in file tools, confined to ``current_tool_env().workspace``.

``read_file``, ``list_files``, ``glob_files`` and ``grep_files`` are read-only; ``write_file`` and
``edit_file`` change files. Paths are taken relative to the workspace root (absolute paths must lie
inside it), resolved with symlinks, and refused with a tool error when they escape the root. Output
paths are relative to the root. The work runs in worker threads (sync functions under ``@tool``).
What a ``Read`` deny rule covers (``ToolEnv.read_guard``) is left out of what ``list_files``,
``glob_files`` and ``grep_files`` show, and naming it as their path is a tool error.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ToolError
from .base import ALIASES, Tool, ToolEnv, resolve_tool_name
from .decorator import make_tool
from .notebook import notebook_edit
from .paths import (
    compile_glob,
    display,
    is_binary,
    is_inside,
    open_in,
    open_regular,
    replace_file,
    resolve_in_workspace,
    walk_files,
)
from .patterns import BoundedPattern

__all__ = ["ALIASES", "EDIT_TOOLS", "filesystem_tools", "resolve_tool_name"]

EDIT_TOOLS = frozenset({"write_file", "edit_file", "multi_edit", "notebook_edit"})
"""Tools that only change files in the workspace (allowed without asking in ``accept_edits``)."""

MAX_LINE_CHARS = 2000
MAX_READ_CHARS = 100_000
MAX_GREP_FILE_BYTES = 10_000_000
MAX_LISTED = 1000


def _existing(env: ToolEnv, path: str) -> tuple[Path, str]:
    real = resolve_in_workspace(env.workspace, path)
    shown = display(env.workspace, real)
    if not real.exists():
        raise ToolError(f"{shown} does not exist; use list_files or glob_files to find the path")
    return real, shown


def _readable(env: ToolEnv, path: str) -> tuple[Path, str]:
    """:func:`_existing`, refused with a tool error naming the rule if a ``Read`` deny rule
    covers it (``env.read_guard``)."""
    real, shown = _existing(env, path)
    env.refuse_unreadable(shown)
    return real, shown


def _text_file(env: ToolEnv, path: str, flags: int = os.O_RDONLY) -> tuple[int, Path, str]:
    """``(fd, real path, shown path)`` of a text file of the workspace, opened with ``flags``
    through :func:`open_regular` (the file checked is the file opened). Its content is read, so
    a ``Read`` deny rule refuses it, for an edit too (whose answers would tell the content)."""
    real, shown = _readable(env, path)
    fd = open_regular(env.workspace, real, flags)
    if is_binary(os.pread(fd, 8192, 0)):
        os.close(fd)
        raise ToolError(f"{shown} is a binary file; only text files can be read or edited")
    return fd, real, shown


def _cut_lines(fh: io.TextIOBase) -> Iterator[str]:
    """The lines of ``fh`` without their ends, each cut after ``MAX_LINE_CHARS + 1`` characters
    (the rest of a longer line is read a piece at a time and dropped)."""
    while line := fh.readline(MAX_LINE_CHARS + 1):
        if len(line) > MAX_LINE_CHARS and not line.endswith("\n"):
            while (rest := fh.readline(65536)) and not rest.endswith("\n"):
                pass
        yield line.rstrip("\r\n")


def read_file(
    path: str,
    offset: Annotated[int, Field(ge=0)] = 0,
    limit: Annotated[int, Field(ge=1, le=10_000)] = 2000,
    *,
    env: ToolEnv,
) -> str:
    """Read a text file of the workspace; every line is prefixed with its number (cite as file:line).

    Args:
        path: File path relative to the workspace root.
        offset: Number of lines to skip from the start of the file.
        limit: Maximum number of lines to return.
    """
    fd, _, shown = _text_file(env, path)
    out: list[str] = []
    size, lineno, more = 0, 0, False
    with open(fd, encoding="utf-8", errors="replace") as fh:
        for lineno, text in enumerate(_cut_lines(fh), 1):
            if lineno <= offset:
                continue
            if len(out) >= limit or size >= MAX_READ_CHARS:
                more = True
                break
            if len(text) > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + " ... [line truncated]"
            out.append(f"{lineno:>6}\t{text}")
            size += len(out[-1]) + 1
    if lineno == 0:
        return f"{shown} is empty"
    if not out:
        raise ToolError(f"offset {offset} is past the end of {shown}, which has {lineno} lines")
    if more:
        last = offset + len(out)
        out.append(f"... more lines follow; call read_file with offset={last} to continue")
    return "\n".join(out)


def _open_for_writing(root: Path, real: Path, shown: str) -> tuple[int, bool]:
    """``(fd, existed)``: ``real`` created exclusively (its directories too), else the regular
    file there opened; never through a symlink (:func:`open_in`)."""
    try:
        return open_in(root, real, os.O_WRONLY | os.O_CREAT | os.O_EXCL, make=True), False
    except FileExistsError:
        return open_regular(root, real, os.O_WRONLY), True
    except OSError as exc:
        raise ToolError(f"cannot create {shown}: {exc.strerror}") from None


def write_file(path: str, content: str, *, env: ToolEnv) -> str:
    """Create or overwrite a file in the workspace with `content` (parent directories are created).

    Args:
        path: File path relative to the workspace root.
        content: The complete new content of the file.
    """
    real = resolve_in_workspace(env.workspace, path)
    shown = display(env.workspace, real)
    if real == env.workspace:
        raise ToolError(f"{shown} is a directory; pass a file path")
    fd, existed = _open_for_writing(env.workspace, real, shown)
    with open(fd, "w", encoding="utf-8", newline="") as fh:
        os.ftruncate(fd, 0)  # only now: the file opened is a regular file of the workspace
        fh.write(content)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "updated" if existed else "created"
    return f"{verb} {shown} ({lines} lines, {len(content.encode())} bytes)"


def _replace(text: str, shown: str, old: str, new: str, replace_all: bool) -> tuple[str, int, int]:
    """``text`` with ``old`` replaced: ``(new text, occurrences, first line)``; ToolError otherwise."""
    if not old:
        raise ToolError("old_string is empty; use write_file to create or overwrite a file")
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change")
    if old not in text and "\r\n" in text:
        old, new = (s.replace("\n", "\r\n") for s in (old, new))
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {shown}; read the file and copy the exact text, "
            "including whitespace"
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {shown}; include more surrounding text to make "
            "it unique, or set replace_all=true"
        )
    line = text.count("\n", 0, text.index(old)) + 1
    return text.replace(old, new), count, line


def _read_text(fh: io.TextIOBase, shown: str) -> str:
    try:
        return fh.read()
    except UnicodeDecodeError:
        raise ToolError(f"{shown} is not valid UTF-8; it cannot be edited as text") from None


def edit_file(
    path: str, old_string: str, new_string: str, replace_all: bool = False, *, env: ToolEnv
) -> str:
    """Replace exact text in a file. `old_string` must occur exactly once unless `replace_all`.

    Args:
        path: File path relative to the workspace root.
        old_string: The exact text to replace, including whitespace and indentation.
        new_string: The replacement text.
        replace_all: Replace every occurrence instead of requiring a unique match.
    """
    fd, _, shown = _text_file(env, path, os.O_RDWR)
    with open(fd, "r+", encoding="utf-8", newline="") as fh:
        text, count, line = _replace(
            _read_text(fh, shown), shown, old_string, new_string, replace_all
        )
        fh.seek(0)
        fh.write(text)
        fh.truncate()
    return f"edited {shown}: replaced {count} occurrence(s), first at line {line}"


class Edit(BaseModel):
    """One replacement of :func:`multi_edit`."""

    model_config = ConfigDict(extra="forbid")

    old_string: str
    new_string: str
    replace_all: bool = False


def multi_edit(
    path: str, edits: Annotated[list[Edit], Field(min_length=1, max_length=100)], *, env: ToolEnv
) -> str:
    """Make several replacements in one file, in order, all or nothing.

    Each edit applies to the text the previous ones produced. If any edit fails (text not found,
    not unique), the file is left unchanged and the error names that edit.

    Args:
        path: File path relative to the workspace root.
        edits: The replacements: each has old_string, new_string and optional replace_all.
    """
    fd, real, shown = _text_file(env, path)
    with open(fd, encoding="utf-8", newline="") as fh:
        text = _read_text(fh, shown)
    total = 0
    for index, edit in enumerate(edits):
        try:
            text, count, _ = _replace(
                text, shown, edit.old_string, edit.new_string, edit.replace_all
            )
        except ToolError as exc:
            raise ToolError(
                f"edit {index + 1} of {len(edits)}: {exc}; no edit was applied"
            ) from None
        total += count
    replace_file(env.workspace, real, text)
    return f"edited {shown}: {len(edits)} edit(s), {total} replacement(s)"


def list_files(path: str = ".", *, env: ToolEnv) -> str:
    """List the entries of a workspace directory (directories end with '/').

    Args:
        path: Directory relative to the workspace root.
    """
    real, shown = _readable(env, path)
    if not real.is_dir():
        raise ToolError(f"{shown} is a file, not a directory; use read_file to read it")
    try:
        fd = open_in(env.workspace, real, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:  # no longer a directory
        raise ToolError(f"cannot list {shown}: {exc.strerror}; check the path") from None
    try:  # the directory checked, not one swapped in for it since
        listed = sorted(os.scandir(fd), key=lambda e: e.name)
    finally:
        os.close(fd)
    dirs: list[str] = []
    files: list[str] = []
    for entry in listed:
        p = real / entry.name
        if entry.is_symlink() and not is_inside(env.workspace, Path(os.path.realpath(p))):
            continue
        rel = display(env.workspace, p)
        if env.read_guard is not None and env.read_guard(rel) is not None:
            continue  # under a Read deny rule: not even its name is shown
        (dirs if entry.is_dir() else files).append(rel + "/" if entry.is_dir() else rel)
    entries = dirs + files
    if not entries:
        return f"{shown}/ is empty"
    note = f"\n... {len(entries) - MAX_LISTED} more entries" if len(entries) > MAX_LISTED else ""
    return "\n".join(entries[:MAX_LISTED]) + note


def glob_files(pattern: str, path: str = ".", *, env: ToolEnv) -> str:
    """Find files whose path (relative to `path`) matches a glob such as `**/*.py` or `src/*.{ts,tsx}`.

    Args:
        pattern: Glob: `*` matches within a directory, `**` across directories.
        path: Directory to search, relative to the workspace root.
    """
    regex = compile_glob(pattern)
    base, shown = _readable(env, path)
    keep = frozenset(pattern.split("/"))
    found = [
        display(env.workspace, p)
        for p in walk_files(env.workspace, base, keep, env.read_guard)
        if regex.fullmatch(p.relative_to(base).as_posix())
    ]
    if not found:
        return f"no files match {pattern!r} under {shown}"
    note = f"\n... {len(found) - MAX_LISTED} more files" if len(found) > MAX_LISTED else ""
    return "\n".join(found[:MAX_LISTED]) + note


def grep_files(
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    max_results: Annotated[int, Field(ge=1, le=5000)] = 200,
    *,
    env: ToolEnv,
) -> str:
    """Search text files for a regular expression (Python syntax; prefix `(?i)` to ignore case).
    Prints one `file:line: text` row per matching line.

    Args:
        pattern: Regular expression to search for.
        path: File or directory to search, relative to the workspace root.
        glob: Only search files matching this glob (`*.py` matches names at any depth).
        max_results: Stop after this many matching lines.
    """
    regex = BoundedPattern(pattern)  # a time bound: a catastrophic pattern is a tool error
    base, shown = _readable(env, path)
    name_glob = compile_glob(glob) if glob else None
    rows: list[str] = []
    for file in walk_files(env.workspace, base, hidden=env.read_guard):
        if name_glob is not None:
            subject = file.name if "/" not in (glob or "") else file.relative_to(base).as_posix()
            if not name_glob.fullmatch(subject):
                continue
        rows.extend(_grep_one(env, file, regex, max_results - len(rows)))
        if len(rows) >= max_results:
            rows.append(f"... stopped after {max_results} matches; narrow the pattern or path")
            break
    return "\n".join(rows) if rows else f"no matches for {pattern!r} under {shown}"


def _open_walked(env: ToolEnv, file: Path) -> int | None:
    """A file a walk found, opened as :func:`read_file` opens a path (its real path inside the
    workspace, allowed by ``env.read_guard``, no symlink followed since); None if it is not."""
    try:
        real = resolve_in_workspace(env.workspace, str(file))
        if env.read_guard is not None and env.read_guard(display(env.workspace, real)):
            return None
        return open_in(env.workspace, real, os.O_RDONLY | os.O_NONBLOCK)
    except (ToolError, OSError):
        return None


def _grep_one(env: ToolEnv, file: Path, regex: BoundedPattern, budget: int) -> list[str]:
    fd = _open_walked(env, file)
    if fd is None:
        return []
    with open(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_GREP_FILE_BYTES:
            return []
        data = fh.read()
    if is_binary(data[:8192]):
        return []
    rows: list[str] = []
    rel = display(env.workspace, file)
    for lineno, line in enumerate(io.StringIO(data.decode("utf-8", errors="replace")), 1):
        if regex.search(line, where=rel):
            rows.append(f"{rel}:{lineno}: {line.strip()[:500]}")
            if len(rows) >= budget:
                break
    return rows


def read_tool() -> Tool:
    """The built-in ``read_file`` tool (whose calls ``Read`` permission rules are matched on)."""
    return _builtin_tools()[0]


def edit_tools() -> tuple[Tool, ...]:
    """The built-in tools that edit files (:data:`EDIT_TOOLS`), whose calls ``Edit`` and
    ``Write`` permission rules are matched on."""
    return tuple(t for t in _builtin_tools() if t.name in EDIT_TOOLS)


@functools.cache
def _builtin_tools() -> tuple[Tool, ...]:
    return (
        make_tool(read_file, read_only=True),
        make_tool(write_file),
        make_tool(edit_file),
        make_tool(multi_edit),
        make_tool(list_files, read_only=True, primary_argument="path"),
        make_tool(glob_files, read_only=True, primary_argument="path"),
        make_tool(grep_files, read_only=True, primary_argument="path"),
        make_tool(notebook_edit, primary_argument="notebook_path"),
    )


def filesystem_tools() -> list[Tool]:
    """Fresh copies of the built-in file tools (eight, ``notebook_edit`` included)."""
    return [
        dataclasses.replace(t, parameters=copy.deepcopy(t.parameters)) for t in _builtin_tools()
    ]
