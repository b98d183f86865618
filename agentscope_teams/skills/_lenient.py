"""The lenient reading of a frontmatter that is not YAML only because a value holds an unquoted ': '.

Claude Code spec files in the wild often read ``description: Use this agent for X. Triggers on:
'a', 'b'``, which strict YAML refuses ("mapping values are not allowed here"). Strict YAML is always
tried first; when it fails, :func:`quote_values` looks at the frontmatter line by line. It applies
only when every top-level line is a plain ``key: value`` (or ``key:``) line, each followed by
indented lines, a block list, blank lines or comments. Each key's block that YAML accepts on its own
is kept as written; a block it refuses is rewritten only if it is a plain scalar value (possibly
continued on indented lines) that contains ': ', by quoting the value on the key's line and blanking
its continuation lines, so every line keeps its number. The rewritten text is then parsed as YAML
again, so whatever else is wrong (a mis-indented key, a broken quote) is still reported with its line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import yaml

_KEY_LINE = re.compile(r"(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)[ \t]*:(?:[ \t]+(?P<value>.*))?")
_COLON = re.compile(r":(?:[ \t]|$)")  # what YAML reads as a mapping value inside a plain scalar
_COMMENT = re.compile(r"(?:^|[ \t]+)#.*$")  # a YAML comment starts at '#' after a blank
_INDICATORS = frozenset("\"'[]{}|>&*!%@`,#")  # a value starting with one is not a plain scalar


@dataclass(frozen=True)
class Quoted:
    """A value the lenient reading quoted: its key and the index of the key's line in the text."""

    index: int
    key: str


def lenient_note(key: str) -> str:
    """The warning of a value that only loaded leniently."""
    return (
        f"loaded leniently: quote the value of {key!r}, which contains ': ' and is not valid YAML "
        f'unquoted (`{key}: "..."`); `specs check --strict` refuses it'
    )


def quote_values(text: str) -> tuple[str, list[Quoted]] | None:
    """``text`` with each unquoted value holding ': ' quoted, line for line, and what was quoted.

    ``None`` when the frontmatter is not a flat list of ``key: value`` blocks, or no block could be
    rescued: the caller then reports the original YAML error.
    """
    lines = text.split("\n")
    blocks = _blocks(lines)
    if blocks is None:
        return None
    out = list(lines)
    quoted: list[Quoted] = []
    for start, end in blocks:
        if _parses(lines[start:end]):
            continue
        rewritten = _quote(lines[start:end])
        if rewritten is not None:
            out[start:end] = rewritten
            quoted.append(Quoted(start, _key(lines[start])))
    return ("\n".join(out), quoted) if quoted else None


def _blocks(lines: list[str]) -> list[tuple[int, int]] | None:
    """``(start, end)`` line indexes of each top-level key's block, or None if a top-level line
    is not a plain key line (an indented first key, a quoted key, a stray scalar)."""
    starts: list[int] = []
    for index, line in enumerate(lines):
        text = line.strip()
        if not text or text.startswith("#"):
            continue  # blank lines and comments go with the block above
        if line[0].isspace() or line.startswith("-"):
            if not starts:
                return None  # indented text before the first key: indented wrongly
            continue  # a continuation, a nested block or a block list item of the key above
        if _KEY_LINE.fullmatch(line.rstrip()) is None:
            return None
        starts.append(index)
    return [(s, e) for s, e in zip(starts, [*starts[1:], len(lines)], strict=True)] or None


def _key(line: str) -> str:
    found = _KEY_LINE.fullmatch(line.rstrip())
    assert found is not None  # _blocks checked every key line
    return found["key"]


def _quote(block: list[str]) -> list[str] | None:
    """The block with its plain scalar value quoted, or None if it is not that case."""
    found = _KEY_LINE.fullmatch(block[0].rstrip())
    assert found is not None
    value = _uncomment(found["value"] or "")
    if not value or value[0] in _INDICATORS or value[:2] in ("- ", "? ", ": "):
        return None
    pending = 0
    for line in block[1:]:
        stripped = _uncomment(line)
        if line.strip() and not line[0].isspace() and not line.startswith("#"):
            return None  # a block list or another structure under a scalar
        if not line.strip():
            pending += 1
        elif stripped:  # YAML folds continuation lines: a space, or the blank lines' newlines
            value += ("\n" * pending if pending else " ") + stripped
            pending = 0
    if _COLON.search(value) is None:
        return None  # it fails for another reason: leave it to the YAML error
    head = block[0][: found.start("value")]
    rewritten = [head + json.dumps(value, ensure_ascii=False), *([""] * (len(block) - 1))]
    return rewritten if _parses(rewritten) else None


def _uncomment(text: str) -> str:
    return _COMMENT.sub("", text).strip()


def _parses(lines: list[str]) -> bool:
    try:
        yaml.safe_load("\n".join(lines))
    except yaml.YAMLError:
        return False
    return True
