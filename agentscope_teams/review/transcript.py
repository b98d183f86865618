"""What the offline model reads from the results it is given.

Team and subagent tools return structured results (:meth:`Call.result`): task results are read as
their findings data, never as text. The file tools return text made for a model, read here with pure
functions, no I/O: the source of a file from ``read_file``'s line-numbered chunks (the toolkit's
format, not a model's words), the paths of a ``glob_files`` listing, the files named in a task
description (the member reading its own instructions, as any model does; the offline lead writes
them one per line), and the split of a file list into review tasks. The offline model (:mod:`.offline_model`) decides every step from the
conversation with these; nothing here looks at the disk.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..tools import ToolOutput

OutputT = TypeVar("OutputT", bound=ToolOutput)

_NUMBERED = re.compile(r"^\s*(\d+)\t(.*)$")
_MORE = re.compile(r"^\.\.\. more lines follow; call read_file with offset=(\d+)")
_TRUNCATED = " ... [line truncated]"
_OUTPUT_CUT = "\n\n[output truncated: "
_FILE_LINE = re.compile(r"^(?:[-*]\s+)?`?(?P<path>[^`\s][^`]*?\.[A-Za-z0-9_]+)`?$")

#: Files per review task when the file list is short; long lists get bigger groups (see
#: split_files), so a member's tasks fit in one call of a spec's 12 steps (1 + 2 per task + 1).
GROUP_SIZE = 3
MAX_GROUPS = 4


@dataclass(frozen=True)
class FileText:
    """A file rebuilt from ``read_file`` chunks; ``next_offset`` is set while lines are missing."""

    source: str
    next_offset: int | None = None
    truncated_lines: int = 0


def rebuild_source(chunks: Iterable[str]) -> FileText:
    """The file text from ``read_file`` outputs (``"    12\\tcode"`` lines) of one path.

    Chunks may overlap or come in any order (reads with different offsets); lines are placed by
    their number and gaps become empty lines, so line numbers stay right. ``next_offset`` is the
    first offset still to read: from a "more lines follow" note, or after the last whole line of an
    output the toolkit cut short ("[output truncated: ...]"), that no other chunk has covered.
    """
    lines: dict[int, str] = {}
    pending: set[int] = set()
    truncated = 0
    for chunk in chunks:
        numbered, resume = _whole_lines(chunk)
        if resume is not None:
            pending.add(resume)
        for raw in numbered:
            m = _NUMBERED.match(raw)
            if m is not None:
                text = m[2]
                if text.endswith(_TRUNCATED):
                    truncated += 1
                    text = text[: -len(_TRUNCATED)]
                lines[int(m[1])] = text
                continue
            more = _MORE.match(raw)
            if more is not None:
                pending.add(int(more[1]))
    missing = sorted(o for o in pending if o + 1 not in lines)
    last = max(lines, default=0)
    source = "\n".join(lines.get(n, "") for n in range(1, last + 1))
    return FileText(
        source=source + "\n" if last else "",
        next_offset=missing[0] if missing else None,
        truncated_lines=truncated,
    )


def _whole_lines(chunk: str) -> tuple[list[str], int | None]:
    """The lines of one output; when the toolkit cut it, without the partial last line and with
    the offset to read on from."""
    body, cut, _ = chunk.partition(_OUTPUT_CUT)
    lines = body.splitlines()
    if not cut:
        return lines, None
    while lines:
        m = _NUMBERED.match(lines.pop())
        if m is not None:
            return lines, int(m[1]) - 1
    return lines, None


def glob_paths(output: str) -> list[str]:
    """The paths of a ``glob_files`` listing (notes such as "no files match" are skipped)."""
    out = []
    for line in output.splitlines():
        line = line.strip()
        if not line or line.startswith("... ") or line.startswith("no files match "):
            continue
        out.append(line)
    return out


def files_in_text(text: str) -> list[str]:
    """Paths listed one per line in a task description (optionally as ``- `path` `` bullets).

    A line counts as a path when it is a single path-like token with a file extension; prose lines
    (with spaces or ending in ``:``) are not paths. Order is kept; duplicates are dropped.
    """
    out: dict[str, None] = {}
    for raw in text.splitlines():
        m = _FILE_LINE.match(raw.strip())
        if m is not None and " " not in m["path"]:
            out.setdefault(m["path"])
    return list(out)


def split_files(files: Sequence[str]) -> list[list[str]]:
    """Consecutive groups of about :data:`GROUP_SIZE` files, at most :data:`MAX_GROUPS` groups."""
    if not files:
        return []
    groups = min(MAX_GROUPS, math.ceil(len(files) / GROUP_SIZE))
    size = math.ceil(len(files) / groups)
    return [list(files[i : i + size]) for i in range(0, len(files), size)]


def describe_group(files: Sequence[str]) -> str:
    """A short label for a group of files: ``a.py, b.py`` or ``a.py and 4 more``."""
    if len(files) <= 3:
        return ", ".join(files)
    return f"{files[0]}, {files[1]} and {len(files) - 2} more"


@dataclass(frozen=True)
class Call:
    """One tool call of the conversation and its result (``output`` None: no result yet);
    ``data`` is the tool's structured result, when it returns one."""

    name: str
    input: dict[str, object]
    output: str | None = None
    is_error: bool = False
    data: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.output is not None and not self.is_error

    @property
    def interrupted(self) -> bool:
        """The call never ran to the end (its process stopped, or the reply was cancelled)."""
        return self.is_error and (self.output or "").startswith(_INTERRUPTED)

    def arg(self, key: str) -> str:
        value = self.input.get(key)
        return value if isinstance(value, str) else ""

    def result(self, kind: type[OutputT]) -> OutputT | None:
        """The structured result as ``kind``, or None (no result yet, an error, or text only)."""
        if not self.ok or self.data is None:
            return None
        return kind.model_validate(self.data)


@dataclass(frozen=True)
class Step:
    """What the offline model does next: some text, then tool calls (none: the final answer)."""

    text: str
    calls: tuple[tuple[str, dict[str, object]], ...] = ()


_INTERRUPTED = ("the tool call did not complete", "interrupted")


#: The budget of a task's result text (a summary for people; the findings data has them all).
RESULT_BUDGET = 1900
_SENTENCE_END = re.compile(r"(?<=[a-z)\]`'])(?::|;|\.)\s")


def short_message(message: str, limit: int = 110) -> str:
    """The first clause of a finding message, at most ``limit`` characters."""
    m = _SENTENCE_END.search(message)
    text = message[: m.start()] if m else message
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def fit_lines(
    full: Sequence[str], short: Sequence[str], budget: int = RESULT_BUDGET
) -> tuple[list[str], list[str]]:
    """The lines that fit in ``budget`` characters, and the rest (in full).

    ``full`` and ``short`` are the same findings written out in full and shortened: the full lines
    when they all fit, else the short ones, as many as fit.
    """
    if len("\n".join(full)) <= budget:
        return list(full), []
    kept: list[str] = []
    size = 0
    for i, line in enumerate(short):
        if size + len(line) + 1 > budget:
            return kept, list(full[i:])
        kept.append(line)
        size += len(line) + 1
    return kept, []
