"""Reading one spec file: the YAML frontmatter, the line of every key, and the problems found.

:func:`draft_spec` turns a file into a :class:`Draft`: the keys ready for
:class:`~agentscope_teams.subagents.spec.SubagentSpec` validation, the errors and notes found so far
(each with its line in the file), and the key -> line map that places validation errors.

The frontmatter is split here and parsed with PyYAML's node API rather than with python-frontmatter,
which strips the text (so YAML error lines no longer match the file), keeps the last of two
duplicate keys without a word, and reads an unclosed frontmatter as a file without one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError
from ..skills._lenient import lenient_note, quote_values
from ..trust import claude_agents_folder
from ._fields import (
    NAME_RE,
    NAME_RULE,
    SPEC_KEYS,
    describe,
    merge_steps,
    normalize_fields,
    set_aside_auto_mode,
    unknown_key_note,
)

_LINE_SPLIT_RE = re.compile(r"\r\n|\r|\n")


@dataclass
class Frontmatter:
    data: Any
    node: yaml.Node | None
    start: int  # file line of the opening `---`
    end: int  # file line of the closing `---`
    body: str
    lenient: list[tuple[int, str]] = field(default_factory=list)  # (file line, key) quoted


def read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError(path, None, f"cannot read the spec file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        reason = f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); save it as UTF-8"
        raise SpecError(path, line, reason) from None
    return text.removeprefix("\ufeff")


def split_frontmatter(path: Path, text: str, *, strict_yaml: bool = False) -> Frontmatter:
    """Split off and parse the frontmatter: strict YAML first, then (unless ``strict_yaml``) the
    lenient reading of values that hold an unquoted ': ' (``skills._lenient``, shared with
    SKILL.md files)."""
    lines = _LINE_SPLIT_RE.split(text)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or lines[first].rstrip() != "---":
        raise SpecError(
            path,
            1 if first is None else first + 1,
            "no YAML frontmatter: a spec starts with a `---` line, then keys such as "
            "`description: ...`, then a closing `---` line, then the system prompt",
        )
    close = next((i for i in range(first + 1, len(lines)) if lines[i].rstrip() == "---"), None)
    if close is None:
        raise SpecError(
            path,
            first + 1,
            "the frontmatter opened on this line is never closed; add a `---` line after the last key",
        )
    yaml_text, body = "\n".join(lines[first + 1 : close]), "\n".join(lines[close + 1 :])
    try:
        node, data = _parse_yaml(path, yaml_text, first + 2)
    except SpecError as exc:
        rescued = None if strict_yaml else quote_values(yaml_text)
        if rescued is None:
            hint = margin_hint(yaml_text, first + 2)
            if hint is None:
                raise
            raise SpecError(path, exc.line, f"{exc.reason.split('; quote')[0]}; {hint}") from None
        node, data = _parse_yaml(path, rescued[0], first + 2)  # what is left is reported
        lenient = [(first + 2 + q.index, q.key) for q in rescued[1]]
        return Frontmatter(data, node, first + 1, close + 1, body, lenient)
    return Frontmatter(data, node, first + 1, close + 1, body)


_TOP_KEY_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*:(?:[ \t]|$)")


def margin_hint(text: str, first_line: int) -> str | None:
    """How to fix a value written over several lines whose next lines start at the left margin
    (``<example>`` blocks in a description): the first such line that is no ``key:`` line at all,
    laid to the spec key above it. None when there is none."""
    key: tuple[str, int] | None = None
    for index, line in enumerate(text.split("\n")):
        if not line.strip() or line.startswith(("#", "-", " ", "\t")):
            continue
        found = _TOP_KEY_RE.match(line)
        if found is not None:
            if found.group(1) in SPEC_KEYS:  # `user:` of a dialogue is not a key of the spec
                key = (found.group(1), first_line + index)
        elif key is not None:
            name, at = key
            return (
                f"line {first_line + index} starts at the left margin but is not a `key:` line: "
                f"it goes on the value of {name!r} (line {at}); write a value of several lines "
                f"as a block, `{name}: |` and then every line of it indented by two spaces"
            )
    return None


def _parse_yaml(path: Path, text: str, first_line: int) -> tuple[yaml.Node | None, Any]:
    """Parse the frontmatter text, whose first line is ``first_line`` of the file."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first_line + mark.line if mark is not None else first_line - 1
        raise SpecError(path, line, _yaml_reason(exc, first_line)) from None
    except yaml.YAMLError as exc:
        raise SpecError(path, first_line - 1, f"invalid YAML in the frontmatter: {exc}") from None
    finally:
        loader.dispose()


def _yaml_reason(exc: yaml.MarkedYAMLError, first_line: int) -> str:
    reason = f"invalid YAML in the frontmatter: {exc.problem or exc.context}"
    if exc.problem_mark is not None:
        reason += f" (column {exc.problem_mark.column + 1})"
    if exc.problem and exc.context:
        reason += f", {exc.context}"
        context, problem_mark = exc.context_mark, exc.problem_mark
        if context is not None and problem_mark is not None and context.line != problem_mark.line:
            reason += f" started on line {first_line + context.line}"
    problem = exc.problem or ""
    if "mapping values are not allowed" in problem:
        reason += (
            "; quote a value that contains ': ' (description: \"Use when: ...\") "
            "or fix the indentation"
        )
    elif "'\\t'" in problem:
        reason += "; indent with spaces, not tabs"
    return reason


def key_lines(
    node: yaml.Node | None, first_line: int
) -> tuple[dict[str, int], list[tuple[int, str]]]:
    """Map dotted key paths (``workspace.mode``, ``tools.2``) to file lines; list duplicate keys."""
    lines: dict[str, int] = {}
    duplicates: list[tuple[int, str]] = []

    def visit(node: yaml.Node, prefix: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                key, line = prefix + str(key_node.value), first_line + key_node.start_mark.line
                if key in lines:
                    reason = f"key {key!r} appears twice (lines {lines[key]} and {line}); keep one"
                    duplicates.append((line, reason))
                    continue
                lines[key] = line
                visit(value_node, key + ".")
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                lines[f"{prefix}{index}"] = first_line + item.start_mark.line
                visit(item, f"{prefix}{index}.")

    if node is not None:
        visit(node, "")
    return lines, duplicates


# -- from frontmatter to the keys of a spec --------------------------------------------------------


@dataclass
class Draft:
    """A spec file's keys ready for validation, and the problems found on the way there."""

    path: Path
    start: int  # file line of the opening `---`, the line of problems without a key
    data: dict[str, Any] | None = None  # None: the frontmatter is unusable, nothing to validate
    lines: dict[str, int] = field(default_factory=dict)
    errors: list[SpecError] = field(default_factory=list)
    failed: set[str] = field(default_factory=set)  # keys already reported: skip their errors
    notes: list[tuple[int, str]] = field(default_factory=list)
    name_line: int = 1
    alias_used: bool = False  # `max_iters` given instead of `steps`

    def fail(self, line: int, reason: str, key: str | None = None) -> None:
        self.errors.append(SpecError(self.path, line, reason))
        if key is not None:
            self.failed.add(key)


def claude_project_root(path: Path) -> Path | None:
    """The project of a Claude Code agent file (``<root>/.claude/agents/x.md`` -> ``<root>``, also
    from a subfolder: ``<root>/.claude/agents/team/x.md``)."""
    agents = claude_agents_folder(path.parent)
    return agents.parent.parent if agents is not None else None


def draft_spec(
    path: Path, aliases: Mapping[str, str] | None, *, strict_yaml: bool = False
) -> Draft:
    """Read ``path`` into a :class:`Draft`; raises :class:`SpecError` if there is no frontmatter."""
    fm = split_frontmatter(path, read_text(path), strict_yaml=strict_yaml)
    draft = Draft(path, fm.start)
    if fm.data is None:
        draft.fail(fm.start, "the frontmatter is empty; add at least a `description:` line")
        return draft
    if not isinstance(fm.data, dict):
        got = describe(fm.data)
        draft.fail(fm.start + 1, f"the frontmatter must be a mapping of keys, got {got}")
        return draft
    draft.lines, duplicates = key_lines(fm.node, fm.start + 1)
    for line, reason in duplicates:
        draft.fail(line, reason)
    if not duplicates:
        _fill(draft, fm, aliases)
    return draft


def _fill(draft: Draft, fm: Frontmatter, aliases: Mapping[str, str] | None) -> None:
    """Check and normalize the keys of a well-formed frontmatter into ``draft.data``."""
    lines = draft.lines
    data, extra, notes = _split_keys(fm, lines)
    notes += set_aside_auto_mode(data, extra, lines, fm.start)
    _default_name(draft, data, fm.start)
    draft.name_line = lines.get("name", fm.start)
    draft.alias_used = "max_iters" in data and "steps" not in data
    if "max_iters" in lines:
        lines.setdefault("steps", lines["max_iters"])
    try:
        merge_steps(data)
    except ValueError as exc:
        draft.fail(lines["max_iters"], str(exc), "steps")
    field_notes, field_errors = normalize_fields(data, lines, aliases, fm.start)
    for line, reason, key in field_errors:
        draft.fail(line, reason, key)
    _resolve_workspace_path(data, draft.path)
    if "workspace" not in data and claude_project_root(draft.path) is not None:
        data["workspace"] = {"mode": "shared"}  # works on the project, as in Claude Code
    notes += field_notes
    notes += [(line, lenient_note(key)) for line, key in fm.lenient]
    if not fm.body.strip():
        notes.append((fm.end, "the body is empty, so the subagent has no system prompt"))
    notes.sort(key=lambda note: note[0])
    draft.notes = notes
    warnings = [f"line {line}: {message}" for line, message in notes]
    data.update(system_prompt=fm.body, extra=extra, source=draft.path, warnings=warnings)
    for key in draft.failed:
        data.pop(key, None)
    draft.data = data


def _default_name(draft: Draft, data: dict[str, Any], line: int) -> None:
    """Without a ``name:`` key the subagent is named after its file."""
    if "name" in data:
        return
    stem = draft.path.stem
    data["name"] = stem
    if not NAME_RE.fullmatch(stem):
        reason = (
            f"the file name {stem!r} is not a valid subagent name ({NAME_RULE}); "
            "add a `name:` key or rename the file"
        )
        draft.fail(line, reason, "name")


def _split_keys(
    fm: Frontmatter, lines: Mapping[str, int]
) -> tuple[dict[str, Any], dict[str, Any], list[tuple[int, str]]]:
    """Separate the spec's keys from unknown ones: ``(data, extra, notes)``."""
    data: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    notes: list[tuple[int, str]] = []
    for key, value in fm.data.items():
        if key in SPEC_KEYS:
            data[key] = value
        else:
            extra[str(key)] = value
            notes.append((lines.get(str(key), fm.start), unknown_key_note(str(key))))
    return data, extra, notes


def _resolve_workspace_path(data: dict[str, Any], spec_file: Path) -> None:
    """A relative ``workspace.path`` is relative to the directory holding the spec file."""
    workspace = data.get("workspace")
    raw = workspace.get("path") if isinstance(workspace, dict) else None
    if isinstance(workspace, dict) and isinstance(raw, str) and raw.strip():
        relative = Path(raw.strip()).expanduser()
        data["workspace"] = {**workspace, "path": (spec_file.parent / relative).resolve()}
