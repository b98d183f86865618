"""Subagent spec files: Markdown with YAML frontmatter, loaded into :class:`SubagentSpec`.

The body is the subagent's system prompt::

    ---
    description: Code-review specialist. Use when the user wants a PR reviewed.
    workspace:
      mode: isolated          # isolated (default) | shared
      path: ./defs/reviewer   # optional, relative to this file
    model: openai:gpt-4o-mini # optional: inherit (default); sonnet/opus/haiku via model_aliases
    steps: 8                  # optional, alias max_iters
    tools: [read_file, grep_files]  # or "Read, Grep"; absent: inherit the parent's tools
    context: fresh            # fresh (default) | fork
    ---
    You are a subagent focused on code review.

Files written for Claude Code (``.claude/agents/*.md``) load unchanged: its tool names are mapped
(``Read`` -> ``read_file``, ...), tools this runtime does not offer (``Bash``, ``mcp__*``) are listed in
:attr:`SubagentSpec.unavailable_tools`, and unknown keys (``color``, ...) are kept in
:attr:`SubagentSpec.extra`, each with a warning. Every problem is a :class:`SpecError` naming the file and
the line in the file; :func:`load_specs` collects the problems of every file before raising
:class:`SpecErrors`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..errors import SpecError

#: Claude Code tool names and the tools of this runtime that do the same job.
CLAUDE_CODE_TOOLS: Mapping[str, str] = MappingProxyType(
    {
        "Read": "read_file",
        "Write": "write_file",
        "Edit": "edit_file",
        "MultiEdit": "edit_file",
        "Glob": "glob_files",
        "Grep": "grep_files",
        "LS": "list_files",
    }
)
#: The filesystem tools every agent may be given.
NATIVE_TOOLS = frozenset(CLAUDE_CODE_TOOLS.values())
#: Model aliases of Claude Code, resolved through the ``model_aliases`` configuration.
CLAUDE_MODEL_ALIASES = frozenset({"sonnet", "opus", "haiku"})
#: Keys a spec's frontmatter may hold; any other key is kept in ``extra`` with a warning.
SPEC_KEYS = frozenset(
    {"name", "description", "workspace", "model", "steps", "max_iters", "tools", "context"}
)
_CLAUDE_CODE_KEYS = frozenset(
    {"color", "permissionMode", "disallowedTools", "skills", "hooks", "memory", "mcpServers"}
)
_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_TOOL_NAME_RE = re.compile(
    r"[a-z][A-Za-z0-9_]*"
)  # read_file, claimTask; Claude Code's are Capitalized
_TOOL_SPLIT_RE = re.compile(r",(?![^(]*\))")  # commas outside "Bash(git diff:*)" patterns
_LINE_SPLIT_RE = re.compile(r"\r\n|\r|\n")


class WorkspaceMode(StrEnum):
    """Where a subagent run works: its own directory (``isolated``) or the parent's (``shared``)."""

    ISOLATED = "isolated"
    SHARED = "shared"


class ContextMode(StrEnum):
    """How a child starts: with an empty context (``fresh``) or a snapshot of the parent's (``fork``)."""

    FRESH = "fresh"
    FORK = "fork"


def _describe(value: Any) -> str:
    """Name a value's YAML type for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def _choices(enum: type[StrEnum]) -> str:
    return ", ".join(member.value for member in enum)


class WorkspaceConfig(BaseModel):
    """The ``workspace:`` block of a spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: WorkspaceMode = WorkspaceMode.ISOLATED
    path: Path | None = None

    @field_validator("mode", mode="before")
    @classmethod
    def _check_mode(cls, value: Any) -> Any:
        if isinstance(value, str) and value in set(WorkspaceMode):
            return value
        raise ValueError(
            f"workspace.mode must be one of {_choices(WorkspaceMode)}, got {_describe(value)}"
        )

    @field_validator("path", mode="before")
    @classmethod
    def _check_path(cls, value: Any) -> Any:
        if value is None or isinstance(value, Path):
            return value
        if isinstance(value, str) and value.strip():
            return Path(value.strip()).expanduser()
        raise ValueError(f"workspace.path must be a directory path, got {_describe(value)}")


class _BadToolEntry(ValueError):
    def __init__(self, index: int, value: Any) -> None:
        super().__init__(f"tools[{index}] must be a tool name, got {_describe(value)}")
        self.index = index


def split_tools(value: Any) -> list[str] | None:
    """Read ``tools`` as a list of names: a YAML list or a comma-separated string; ``None`` stays."""
    if value is None:
        return None
    if isinstance(value, str):
        return [name.strip() for name in _TOOL_SPLIT_RE.split(value) if name.strip()]
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise _BadToolEntry(index, item)
        return [item.strip() for item in value]
    raise ValueError(
        f"tools must be a list of tool names or a comma-separated string, got {_describe(value)}"
    )


def normalize_tools(value: Any) -> tuple[list[str] | None, list[str], list[str]]:
    """Return ``(tools, unavailable_tools, warnings)``; Claude Code names map to native ones.

    Names of this runtime start with a lowercase letter (``read_file``, ``claimTask``, a custom
    ``search_docs``); Claude Code's other tools (``Bash``, ``WebFetch``) and MCP tools
    (``mcp__github__create_issue``) are not offered here and are reported.
    """
    names = split_tools(value)
    if names is None:
        return None, [], []
    tools: list[str] = []
    unavailable: list[str] = []
    for name in names:
        native = CLAUDE_CODE_TOOLS.get(name, name)
        if _TOOL_NAME_RE.fullmatch(native) and not native.startswith("mcp__"):
            if native not in tools:
                tools.append(native)
        elif name not in unavailable:
            unavailable.append(name)
    warnings = []
    if unavailable:
        warnings.append(
            f"tools not available in agentscope-teams are ignored: {', '.join(unavailable)}"
        )
    return tools, unavailable, warnings


def resolve_model(value: Any, aliases: Mapping[str, str] | None) -> tuple[str | None, list[str]]:
    """Return ``(model, warnings)``: ``None`` means inherit the parent's model."""
    if value is None:
        return None, []
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            "model must be a model name such as 'openai:gpt-4o-mini', 'inherit' or an alias "
            f"(sonnet, opus, haiku), got {_describe(value)}"
        )
    name = value.strip()
    if name.lower() == "inherit":
        return None, []
    if aliases:
        mapped = aliases.get(name, aliases.get(name.lower()))
        if mapped is not None:
            return mapped, []
    if name.lower() in CLAUDE_MODEL_ALIASES:
        return None, [
            f"model alias {name!r} is not configured (model_aliases); the parent's model is used"
        ]
    return name, []


def _merge_steps(data: dict[str, Any]) -> None:
    """Fold the ``max_iters`` alias into ``steps``; different values for both is an error."""
    if "max_iters" not in data:
        return
    alias = data.pop("max_iters")
    steps = data.get("steps")
    if steps is not None and (type(steps) is not type(alias) or steps != alias):
        raise ValueError(
            f"steps ({steps!r}) and its alias max_iters ({alias!r}) disagree; keep only one of them"
        )
    data["steps"] = alias


class SubagentSpec(BaseModel):
    """A subagent definition: from a spec file (:meth:`from_file`) or built in code.

    Built in code, it accepts what a file accepts (``tools="Read, Grep"``, ``max_iters=5``,
    ``model="sonnet"`` with ``model_validate(..., context={"model_aliases": ...})``) except unknown
    keys, which go in ``extra`` explicitly.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str
    system_prompt: str = ""
    model: str | None = None
    steps: int | None = None
    tools: list[str] | None = None
    unavailable_tools: list[str] = Field(default_factory=list)
    context: ContextMode = ContextMode.FRESH
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    extra: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    source: Path | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalize(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        warnings = list(data.get("warnings") or [])
        _merge_steps(data)
        try:
            tools, unavailable, tool_warnings = normalize_tools(data.get("tools"))
        except ValueError:
            pass  # the field validator reports it with the field's location
        else:
            data["tools"] = tools
            data["unavailable_tools"] = [*data.get("unavailable_tools", ()), *unavailable]
            warnings += tool_warnings
        aliases = (info.context or {}).get("model_aliases")
        try:
            data["model"], model_warnings = resolve_model(data.get("model"), aliases)
            warnings += model_warnings
        except ValueError:
            pass
        if warnings:
            data["warnings"] = warnings
        return data

    @field_validator("name", mode="before")
    @classmethod
    def _check_name(cls, value: Any) -> Any:
        if isinstance(value, str) and _NAME_RE.fullmatch(value):
            return value
        raise ValueError(
            f"name must be 1-64 letters, digits, '-' or '_', got {_describe(value)}; "
            "rename the subagent"
        )

    @field_validator("description", mode="before")
    @classmethod
    def _check_description(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError(f"description must be a string, got {_describe(value)}")
        if not value.strip():
            raise ValueError(
                "description is empty: say in one or two sentences when to use this subagent"
            )
        return value.strip()

    @field_validator("system_prompt", mode="before")
    @classmethod
    def _strip_prompt(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator("model", mode="before")
    @classmethod
    def _check_model(cls, value: Any) -> Any:
        return resolve_model(value, None)[0]

    @field_validator("steps", mode="before")
    @classmethod
    def _check_steps(cls, value: Any) -> Any:
        if value is None or (type(value) is int and value > 0):
            return value
        raise ValueError(
            f"steps must be a positive integer (iterations per spawn), got {_describe(value)}"
        )

    @field_validator("tools", mode="before")
    @classmethod
    def _check_tools(cls, value: Any) -> Any:
        return split_tools(value)

    @field_validator("context", mode="before")
    @classmethod
    def _check_context(cls, value: Any) -> Any:
        if isinstance(value, str) and value in set(ContextMode):
            return value
        raise ValueError(f"context must be one of {_choices(ContextMode)}, got {_describe(value)}")

    @field_validator("workspace", mode="before")
    @classmethod
    def _check_workspace(cls, value: Any) -> Any:
        if isinstance(value, str):  # shorthand: `workspace: shared`
            return {"mode": value}
        if value is None:
            return {}
        if isinstance(value, Mapping | WorkspaceConfig):
            return value
        raise ValueError(
            "workspace must be a mapping with `mode` (isolated or shared) and an optional `path`, "
            f"got {_describe(value)}"
        )

    @classmethod
    def from_file(
        cls, path: Path | str, *, model_aliases: Mapping[str, str] | None = None
    ) -> SubagentSpec:
        """Load one spec file. Raises :class:`SpecError` (:class:`SpecErrors` for several problems)."""
        parsed = _parse_spec_file(Path(path), model_aliases)
        if parsed.errors:
            raise parsed.errors[0] if len(parsed.errors) == 1 else SpecErrors(parsed.errors)
        assert parsed.spec is not None
        return parsed.spec


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


class SpecErrors(SpecError):
    """Several spec problems at once; ``errors`` holds each :class:`SpecError` (file and line)."""

    def __init__(self, errors: Sequence[SpecError], source: Path | str | None = None) -> None:
        self.errors = list(errors)
        files = {error.file for error in self.errors}
        listing = "\n".join(f"  {error}" for error in self.errors)
        reason = (
            f"{_plural(len(self.errors), 'problem')} in {_plural(len(files), 'spec file')}; "
            f"fix each one and load again:\n{listing}"
        )
        super().__init__(source, None, reason)


@dataclass(frozen=True)
class SpecWarning:
    """Something a spec does that works but is probably not what its author meant."""

    file: Path | None
    line: int | None
    message: str

    def __str__(self) -> str:
        where = str(self.file) if self.file is not None else "<spec>"
        return f"{where}:{self.line}: {self.message}" if self.line else f"{where}: {self.message}"


@dataclass
class SpecLoadResult:
    """What :func:`load_specs` found: the valid specs by name, every error and every warning."""

    specs: dict[str, SubagentSpec] = field(default_factory=dict)
    errors: list[SpecError] = field(default_factory=list)
    warnings: list[SpecWarning] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def load_specs(
    directory: Path | str,
    *,
    strict: bool = True,
    model_aliases: Mapping[str, str] | None = None,
) -> SpecLoadResult:
    """Load every ``*.md`` spec in ``directory`` (not recursive), in file-name order.

    With ``strict`` (the default) any problem in any file raises one :class:`SpecErrors` listing
    them all; with ``strict=False`` the valid specs load and the problems are returned in
    ``errors``. Names are unique: the second file using a name is an error naming both files.
    """
    root = Path(directory)
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        raise SpecError(
            root, None, f"spec directory {what}; pass the folder holding the *.md specs"
        )
    result = SpecLoadResult()
    origin: dict[str, str] = {}
    for path in sorted(p for p in root.glob("*.md") if p.is_file() and not p.name.startswith(".")):
        parsed = _parse_spec_file(path, model_aliases)
        result.errors.extend(parsed.errors)
        result.warnings.extend(parsed.warnings)
        spec = parsed.spec
        if spec is None:
            continue
        if spec.name in result.specs:
            result.errors.append(
                SpecError(
                    path,
                    parsed.name_line,
                    f"duplicate subagent name {spec.name!r}: {origin[spec.name]} already uses it; "
                    "rename one of the two (set `name:` or rename the file)",
                )
            )
            continue
        result.specs[spec.name] = spec
        origin[spec.name] = f"{path}:{parsed.name_line}"
    if strict and result.errors:
        raise SpecErrors(result.errors, root)
    return result


# -- reading one file ------------------------------------------------------------------------------


@dataclass
class _Parsed:
    spec: SubagentSpec | None = None
    errors: list[SpecError] = field(default_factory=list)
    warnings: list[SpecWarning] = field(default_factory=list)
    name_line: int = 1


@dataclass
class _Frontmatter:
    data: Any
    node: yaml.Node | None
    start: int  # file line of the opening `---`
    end: int  # file line of the closing `---`
    body: str


def _read_text(path: Path) -> str:
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


def _split_frontmatter(path: Path, text: str) -> _Frontmatter:
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
    node, data = _parse_yaml(path, "\n".join(lines[first + 1 : close]), first + 2)
    return _Frontmatter(data, node, first + 1, close + 1, "\n".join(lines[close + 1 :]))


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


def _key_lines(
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


def _normalize_fields(
    data: dict[str, Any],
    lines: Mapping[str, int],
    aliases: Mapping[str, str] | None,
    default_line: int,
) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]]:
    """Map tool names and resolve the model alias: ``(notes, errors)``, each tagged with its line."""
    notes: list[tuple[int, str]] = []
    errors: list[tuple[int, str, str]] = []
    if "tools" in data:
        line = lines.get("tools", default_line)
        try:
            data["tools"], data["unavailable_tools"], warnings = normalize_tools(data["tools"])
            notes += [(line, warning) for warning in warnings]
        except _BadToolEntry as exc:
            errors.append((lines.get(f"tools.{exc.index}", line), str(exc), "tools"))
        except ValueError as exc:
            errors.append((line, str(exc), "tools"))
    if "model" in data:
        line = lines.get("model", default_line)
        try:
            data["model"], warnings = resolve_model(data["model"], aliases)
            notes += [(line, warning) for warning in warnings]
        except ValueError as exc:
            errors.append((line, str(exc), "model"))
    return notes, errors


def _line_for(loc: Sequence[str], lines: Mapping[str, int], default: int) -> int:
    parts = list(loc)
    while parts:
        if (line := lines.get(".".join(parts))) is not None:
            return line
        parts.pop()
    return default


def _reason(error: Any, alias_used: bool) -> str:
    """Turn one pydantic error into a sentence that names the key."""
    dotted = ".".join(str(part) for part in error["loc"])
    kind = error["type"]
    if kind == "value_error":
        reason = str(error["ctx"]["error"])
    elif kind == "missing" and dotted == "description":
        reason = (
            "description is required: add a `description:` line saying when to use this subagent"
        )
    elif kind == "missing":
        reason = f"{dotted} is required"
    elif kind == "extra_forbidden" and dotted.startswith("workspace."):
        reason = f"unknown key {dotted!r}; the workspace block takes only `mode` and `path`"
    else:
        reason = f"{dotted or 'frontmatter'}: {error['msg']}"
    if alias_used and reason.startswith("steps "):
        reason = "max_iters (alias of steps) " + reason.removeprefix("steps ")
    return reason


def _unknown_key_note(key: str) -> str:
    if key == "disallowedTools":
        return (
            "Claude Code key 'disallowedTools' is ignored (kept in `extra`); "
            "list the allowed tools in `tools` instead"
        )
    if key in _CLAUDE_CODE_KEYS:
        return f"Claude Code key {key!r} is ignored (kept in `extra`)"
    hint = f"; did you mean {key.lower()!r}?" if key.lower() in SPEC_KEYS else ""
    return f"unknown key {key!r} is ignored (kept in `extra`){hint}"


def _parse_spec_file(path: Path, aliases: Mapping[str, str] | None) -> _Parsed:
    parsed = _Parsed()
    try:
        frontmatter = _split_frontmatter(path, _read_text(path))
    except SpecError as exc:
        parsed.errors.append(exc)
        return parsed
    _build_spec(path, frontmatter, aliases, parsed)
    parsed.errors.sort(key=lambda error: error.line or 0)
    if parsed.errors:
        parsed.spec = None
    return parsed


def _split_keys(
    fm: _Frontmatter, lines: Mapping[str, int]
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
            notes.append((lines.get(str(key), fm.start), _unknown_key_note(str(key))))
    return data, extra, notes


def _resolve_workspace_path(data: dict[str, Any], spec_file: Path) -> None:
    """A relative ``workspace.path`` is relative to the directory holding the spec file."""
    workspace = data.get("workspace")
    raw = workspace.get("path") if isinstance(workspace, dict) else None
    if isinstance(workspace, dict) and isinstance(raw, str) and raw.strip():
        relative = Path(raw.strip()).expanduser()
        data["workspace"] = {**workspace, "path": (spec_file.parent / relative).resolve()}


def _build_spec(
    path: Path, fm: _Frontmatter, aliases: Mapping[str, str] | None, parsed: _Parsed
) -> None:
    failed: set[str] = set()  # keys already reported; their validation errors are not repeated

    def fail(line: int, reason: str, key: str | None = None) -> None:
        parsed.errors.append(SpecError(path, line, reason))
        if key is not None:
            failed.add(key)

    if fm.data is None:
        return fail(fm.start, "the frontmatter is empty; add at least a `description:` line")
    if not isinstance(fm.data, dict):
        got = _describe(fm.data)
        return fail(fm.start + 1, f"the frontmatter must be a mapping of keys, got {got}")
    lines, duplicates = _key_lines(fm.node, fm.start + 1)
    for line, reason in duplicates:
        fail(line, reason)
    if duplicates:
        return None
    data, extra, notes = _split_keys(fm, lines)
    if "name" not in data:
        data["name"] = path.stem
        if not _NAME_RE.fullmatch(path.stem):
            reason = (
                f"the file name {path.stem!r} is not a valid subagent name (1-64 letters, digits, "
                "'-' or '_'); add a `name:` key or rename the file"
            )
            fail(fm.start, reason, "name")
    parsed.name_line = lines.get("name", fm.start)
    alias_used = "max_iters" in data and "steps" not in data
    if "max_iters" in lines:
        lines.setdefault("steps", lines["max_iters"])
    try:
        _merge_steps(data)
    except ValueError as exc:
        fail(lines["max_iters"], str(exc), "steps")
    field_notes, field_errors = _normalize_fields(data, lines, aliases, fm.start)
    for line, reason, key in field_errors:
        fail(line, reason, key)
    _resolve_workspace_path(data, path)
    notes += field_notes
    if not fm.body.strip():
        notes.append((fm.end, "the body is empty, so the subagent has no system prompt"))
    notes.sort(key=lambda note: note[0])
    parsed.warnings = [SpecWarning(path, line, message) for line, message in notes]
    warnings = [f"line {line}: {message}" for line, message in notes]
    data.update(system_prompt=fm.body, extra=extra, source=path, warnings=warnings)
    for key in failed:
        data.pop(key, None)
    try:
        parsed.spec = SubagentSpec.model_validate(data, context={"model_aliases": aliases})
    except ValidationError as exc:
        for error in exc.errors():
            loc = [str(part) for part in error["loc"]]
            if not loc or loc[0] not in failed:
                fail(_line_for(loc, lines, fm.start), _reason(error, alias_used))
    return None
