"""Field rules of subagent specs: tool names, model aliases, ``steps``, and how errors are worded.

Shared by :class:`~agentscope_teams.subagents.spec.SubagentSpec` (specs built in code) and the spec
file reader (:mod:`._frontmatter`), which also tags every problem with its line in the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from ..agent.output import InvalidSchema, check_json_schema
from ..errors import ConfigurationError, field_path
from ..hooks.config import parse_hooks
from ..mcp.tools import is_mcp_name
from ..model.factory import CLAUDE_ALIASES
from ..tools.base import ALIASES
from ..tools.claude_code import parse_tool_entry, unavailable_reason
from ..tools.permissions import resolve_mode

#: Claude Code tool names -> the main tool of this runtime doing that job (the table is
#: :data:`agentscope_teams.tools.claude_code.CLAUDE_TOOLS`).
CLAUDE_CODE_TOOLS: Mapping[str, str] = ALIASES
#: The filesystem tools every agent may be given.
NATIVE_TOOLS = frozenset(
    {"read_file", "write_file", "edit_file", "multi_edit", "glob_files", "grep_files", "list_files"}
)
#: Model aliases of Claude Code: ``model_aliases`` may map them; otherwise they stay as written and
#: the model registry builds them (Anthropic models, see ``agentscope_teams.model.factory``).
CLAUDE_MODEL_ALIASES = frozenset(CLAUDE_ALIASES)
#: Keys a spec's frontmatter may hold; any other key is kept in ``extra`` with a warning.
SPEC_KEYS = frozenset(
    {
        "name",
        "description",
        "workspace",
        "model",
        "steps",
        "max_iters",
        "tools",
        "context",
        "mcpServers",
        "output",
        "skills",
        "disallowedTools",
        "permissionMode",
        "maxTurns",
        "maxTokens",
        "maxBudgetUsd",
        "background",
        "effort",
        "initialPrompt",
        "color",
        "memory",
        "isolation",
        "hooks",
        "a2a",
    }
)
#: Claude Code keys loaded but not acted on (kept in ``extra``; ``specs check --strict`` refuses
#: them): none at the moment.
_CLAUDE_CODE_KEYS: frozenset[str] = frozenset()
#: Subagent names: an identifier only (keys and paths escape every segment), so dotted names
#: written for Claude Code (``dotnet-framework-4.8-expert``) load; no leading or trailing dot, so a
#: name is never a hidden file nor a name Windows trims.
NAME_RE = re.compile(r"(?!\.)[A-Za-z0-9_.-]{1,64}(?<!\.)")
NAME_RULE = "1-64 letters, digits, '-', '_' or '.' (but must not start or end with '.')"
_TOOL_NAME_RE = re.compile(
    r"[a-z][A-Za-z0-9_]*"
)  # read_file, claimTask; Claude Code's are Capitalized
#: MCP tool selections: ``mcp__<server>`` (all its tools) or ``mcp__<server>__<tool>`` (globs allowed).
_MCP_NAME_RE = re.compile(r"mcp__[A-Za-z0-9_-]+(?:__[A-Za-z0-9_*?.\[\]-]+)?")
_TOOL_SPLIT_RE = re.compile(r",(?![^(]*\))")  # commas outside "Bash(git diff:*)" patterns


def describe(value: Any) -> str:
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


def choices(enum: type[StrEnum]) -> str:
    return ", ".join(member.value for member in enum)


class BadToolEntry(ValueError):
    def __init__(self, index: int, value: Any, key: str = "tools") -> None:
        super().__init__(f"{key}[{index}] must be a tool name, got {describe(value)}")
        self.index = index


class BadOutputSchema(ValueError):
    """An invalid ``output:`` schema; ``path`` locates the problem inside it (for the line)."""

    def __init__(self, message: str, path: tuple[str, ...]) -> None:
        super().__init__(message)
        self.path = path


def split_tools(value: Any, key: str = "tools") -> list[str] | None:
    """Read ``tools`` (or another tool list, ``key`` naming it in errors) as a list of names: a
    YAML list or a comma-separated string; ``None`` stays."""
    if value is None:
        return None
    if isinstance(value, str):
        return [name.strip() for name in _TOOL_SPLIT_RE.split(value) if name.strip()]
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise BadToolEntry(index, item, key)
        return [item.strip() for item in value]
    raise ValueError(
        f"{key} must be a list of tool names or a comma-separated string, got {describe(value)}"
    )


@dataclass(frozen=True)
class ToolSelection:
    """What a ``tools:`` list selects.

    ``tools``: our tool names (Claude Code names mapped through the one table,
    :mod:`agentscope_teams.tools.claude_code`); ``unavailable``: entries with no counterpart here;
    ``agents``: the agents ``Agent(a, b)`` lets it spawn (None: any); ``rules``: the entries written
    with a rule in parentheses (``Bash(git diff:*)``), which limit that tool to calls the rule allows.
    """

    tools: list[str] | None
    unavailable: list[str] = field(default_factory=list)
    agents: list[str] | None = None
    rules: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _is_ours(name: str) -> bool:
    return bool(
        _MCP_NAME_RE.fullmatch(name) or (_TOOL_NAME_RE.fullmatch(name) and not is_mcp_name(name))
    )


def select_tools(value: Any) -> ToolSelection:
    """Read a ``tools:`` value (list or comma-separated string); ``None`` (or a ``*`` entry,
    Claude Code's "every tool") selects everything.

    Names of this runtime start with a lowercase letter (``read_file``, ``claimTask``, a custom
    ``search_docs``); MCP tools (``mcp__github__create_issue``, or ``mcp__github`` for every tool of
    that server) are kept and served by the agent's MCP servers; Claude Code's names map to ours
    (``Bash`` -> ``bash``, ``Agent`` -> the ``agent_*`` tools); names with no counterpart are
    reported in ``unavailable``.
    """
    names = split_tools(value)
    if names is None or "*" in names:  # Claude Code's "every tool", as no `tools:` key
        return ToolSelection(None)
    tools: list[str] = []
    unavailable: list[str] = []
    rules: list[str] = []
    agents: list[str] | None = None
    limited = True  # every Agent/Task entry so far names its agents
    for written in names:
        entry = parse_tool_entry(written)
        if entry.claude:
            picked = list(entry.natives)
            if entry.name in ("Agent", "Task"):
                allowed = entry.agents
                limited = limited and allowed is not None
                agents = [*(agents or []), *(allowed or [])] if limited else None
            elif entry.argument is not None:
                rules.append(entry.written)
        elif entry.argument is None and _is_ours(entry.name):
            picked = [entry.name]
        else:
            picked = []
            if written not in unavailable:
                unavailable.append(written)
        tools += [name for name in picked if name not in tools]
    warnings = []
    if unavailable:
        reasons = [f"{n} ({unavailable_reason(n)})" for n in unavailable]
        warnings.append(
            f"tools not available in agentscope-teams are ignored: {', '.join(reasons)}"
        )
    return ToolSelection(tools, unavailable, agents, rules, warnings)


def select_disallowed(value: Any) -> tuple[list[str], list[str], list[str]]:
    """Read ``disallowedTools``: ``(tools removed, deny rules, names matching no tool)``.

    A bare name removes the tool (Claude Code's names mapped, ``Bash`` removes ``bash`` and its
    background tools); an entry with a rule (``Bash(rm:*)``) keeps the tool and denies the calls the
    rule matches. A name that matches nothing (a typo such as ``Bassh`` removes nothing) is a
    warning (:func:`disallowed_note`), and an error in ``specs check --strict``.
    """
    names = split_tools(value, DISALLOWED) or []
    removed: list[str] = []
    rules: list[str] = []
    unknown: list[str] = []
    for written in names:
        entry = parse_tool_entry(written)
        if entry.argument is not None:
            rules.append(entry.written)
            continue
        picked = (
            list(entry.natives) if entry.claude else [entry.name] if _is_ours(entry.name) else []
        )
        if not picked:
            unknown.append(written)
        removed += [n for n in picked if n not in removed]
    return removed, rules, unknown


#: The frontmatter key of the tools a subagent must not have.
DISALLOWED = "disallowedTools"


def disallowed_note(unknown: list[str]) -> str:
    """The warning about ``disallowedTools`` names that match no tool."""
    return (
        f"disallowedTools names no known tool: {', '.join(unknown)}; they remove nothing "
        "(check the spelling: Claude Code's names such as Bash, Write, or ours such as bash)"
    )


def normalize_tools(value: Any) -> tuple[list[str] | None, list[str], list[str]]:
    """Return ``(tools, unavailable_tools, warnings)`` of :func:`select_tools`."""
    picked = select_tools(value)
    return picked.tools, picked.unavailable, picked.warnings


def _apply_selection(data: dict[str, Any], picked: ToolSelection) -> None:
    data["tools"] = picked.tools
    data["unavailable_tools"] = [*data.get("unavailable_tools", ()), *picked.unavailable]
    if picked.agents is not None:
        data["allowed_agents"] = picked.agents
    if picked.rules:
        data["tool_rules"] = [*data.get("tool_rules", ()), *picked.rules]


def resolve_model(value: Any, aliases: Mapping[str, str] | None) -> tuple[str | None, list[str]]:
    """Return ``(model, warnings)``: ``None`` means inherit the parent's model."""
    if value is None:
        return None, []
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            "model must be a model name such as 'openai:gpt-4o-mini', 'inherit' or an alias "
            f"(sonnet, opus, haiku), got {describe(value)}"
        )
    name = value.strip()
    if name.lower() == "inherit":
        return None, []
    if aliases:
        mapped = aliases.get(name, aliases.get(name.lower()))
        if mapped is not None:
            return mapped, []
    if name.lower() in CLAUDE_MODEL_ALIASES:
        return name.lower(), []
    return name, []


def merge_steps(data: dict[str, Any]) -> None:
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


def normalize_fields(
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
            picked = select_tools(data["tools"])
            _apply_selection(data, picked)
            notes += [(line, warning) for warning in picked.warnings]
        except BadToolEntry as exc:
            errors.append((lines.get(f"tools.{exc.index}", line), str(exc), "tools"))
        except ValueError as exc:
            errors.append((line, str(exc), "tools"))
    for key in (DISALLOWED, "disallowed_tools"):
        if key in data:
            line = lines.get(key, default_line)
            try:
                unknown = select_disallowed(data[key])[2]
            except BadToolEntry as exc:
                errors.append((lines.get(f"{key}.{exc.index}", line), str(exc), key))
            except ValueError as exc:
                errors.append((line, str(exc), key))
            else:
                notes += [(line, disallowed_note(unknown))] if unknown else []
    if "model" in data:
        line = lines.get("model", default_line)
        try:
            data["model"], warnings = resolve_model(data["model"], aliases)
            notes += [(line, warning) for warning in warnings]
        except ValueError as exc:
            errors.append((line, str(exc), "model"))
    return notes, errors


def normalize_input(data: Mapping[str, Any], aliases: Mapping[str, str] | None) -> dict[str, Any]:
    """Fold ``max_iters`` into ``steps``, map tool names, resolve the model alias; add warnings.

    A value these cannot read is left for the field validators, which report it with its location.
    """
    data = dict(data)
    warnings = list(data.get("warnings") or [])
    merge_steps(data)
    try:
        picked = select_tools(data.get("tools"))
    except ValueError:
        pass  # the field validator reports it with the field's location
    else:
        _apply_selection(data, picked)
        warnings += picked.warnings
    try:
        data["model"], model_warnings = resolve_model(data.get("model"), aliases)
        warnings += model_warnings
    except ValueError:
        pass
    try:
        disallowed = data.get(DISALLOWED, data.get("disallowed_tools"))
        unknown = select_disallowed(disallowed)[2]
    except ValueError:
        pass  # the field validator reports it with the field's location
    else:
        warnings += [disallowed_note(unknown)] if unknown else []
    if warnings:
        data["warnings"] = warnings
    return data


def check_name(value: Any) -> Any:
    if isinstance(value, str) and NAME_RE.fullmatch(value):
        return value
    raise ValueError(f"name must be {NAME_RULE}, got {describe(value)}; rename the subagent")


def check_description(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError(f"description must be a string, got {describe(value)}")
    if not value.strip():
        raise ValueError(
            "description is empty: say in one or two sentences when to use this subagent"
        )
    return value.strip()


def check_steps(value: Any) -> Any:
    if value is None or (type(value) is int and value > 0):
        return value
    raise ValueError(
        f"steps must be a positive integer (iterations per spawn), got {describe(value)}"
    )


def check_output(value: Any) -> Any:
    """``output``: a JSON schema, as a YAML/JSON mapping or as JSON text; None stays."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(
                f"output must be a JSON schema (a mapping, or JSON text): the text is not JSON ({exc})"
            ) from None
    if not isinstance(value, Mapping):
        raise ValueError(
            "output must be a JSON schema (a mapping such as `type: object` with `properties`), "
            f"got {describe(value)}"
        )
    try:
        return check_json_schema(value)
    except InvalidSchema as exc:
        raise BadOutputSchema(f"output is {exc}; fix the schema", exc.path) from None


def check_choice(value: Any, enum: type[StrEnum], what: str) -> Any:
    """``value`` if it names a member of ``enum``; ``what`` is the key in the message."""
    if isinstance(value, str) and value in set(enum):
        return value
    raise ValueError(f"{what} must be one of {choices(enum)}, got {describe(value)}")


def check_path(value: Any) -> Any:
    if value is None or isinstance(value, Path):
        return value
    if isinstance(value, str) and value.strip():
        return Path(value.strip()).expanduser()
    raise ValueError(f"workspace.path must be a directory path, got {describe(value)}")


def line_for(loc: Sequence[str], lines: Mapping[str, int], default: int) -> int:
    """The file line of the deepest known key on the path ``loc``."""
    parts = list(loc)
    while parts:
        if (line := lines.get(".".join(parts))) is not None:
            return line
        parts.pop()
    return default


def error_reason(error: Any, alias_used: bool) -> str:
    """Turn one pydantic error into a sentence that names the key."""
    dotted = field_path(error)
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


def unknown_key_note(key: str) -> str:
    if key in _CLAUDE_CODE_KEYS:
        return f"Claude Code key {key!r} is ignored (kept in `extra`)"
    hint = f"; did you mean {key.lower()!r}?" if key.lower() in SPEC_KEYS else ""
    return f"unknown key {key!r} is ignored (kept in `extra`){hint}"


EFFORTS = ("low", "medium", "high", "xhigh", "max")


def check_hooks(value: Any) -> Any:
    """A ``hooks:`` mapping in Claude Code's shape, checked entry by entry (kept as written)."""
    if value is None:
        return {}
    try:
        parse_hooks(value, rename={"Stop": "SubagentStop"})
    except ConfigurationError as exc:
        raise ValueError(str(exc).removeprefix("hooks: ")) from None
    return dict(value)


def check_effort(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in EFFORTS:
        return value.strip().lower()
    raise ValueError(f"effort must be one of {', '.join(EFFORTS)}, got {describe(value)}")


#: The load warning (and ``--strict`` error) of ``permissionMode: auto``.
AUTO_MODE_NOTE = (
    "permissionMode 'auto' (Claude Code's classifier) has no counterpart here: the agent runs "
    "in its parent's mode; choose acceptEdits, dontAsk or another mode to set one"
)
MODE_KEYS = ("permissionMode", "permission_mode")


def set_aside_auto_mode(
    data: dict[str, Any], extra: dict[str, Any], lines: Mapping[str, int], default_line: int
) -> list[tuple[int, str]]:
    """Move a ``permissionMode: auto`` from ``data`` to ``extra`` (the file loads, as in Claude
    Code, and the agent keeps its parent's mode: no classifier decides here); its note."""
    for key in MODE_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value.strip() == "auto":
            extra[key] = data.pop(key)
            return [(lines.get(key, default_line), AUTO_MODE_NOTE)]
    return []


def check_permission_mode(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"permissionMode must be a mode name, got {describe(value)}")
    return resolve_mode(value.strip())


def check_disallowed(value: Any) -> Any:
    """``disallowedTools`` entries as written (a list or a comma string)."""
    return split_tools(value, DISALLOWED) or []


def check_max_turns(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"maxTurns must be a whole number of at least 1, got {describe(value)}")
    return value


def check_skills(value: Any) -> Any:
    """Read ``skills`` as Claude Code writes it: a list of skill names or a comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        return [n.strip() for n in value.split(",") if n.strip()]
    if isinstance(value, list | tuple):
        for index, name in enumerate(value):
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"skills[{index}] must be a skill name, got {describe(name)}")
        return [n.strip() for n in value]
    raise ValueError(f"skills must be a list of skill names, got {describe(value)}")


def check_mcp_servers(value: Any) -> Any:
    """Read ``mcpServers`` as Claude Code writes it: a list whose entries name a configured server
    (``- github``) or define one inline (``- time: {command: ..., args: [...]}``), or a mapping of
    names to servers. Returns ``{name: server, or None for a reference}``; ``${VAR}`` stays as
    written until the server is enabled (see :mod:`agentscope_teams.mcp.project`)."""
    from ..errors import ConfigurationError
    from ..mcp.config import parse_server

    if value is None:
        return {}
    entries: list[tuple[str, Any]] = []
    if isinstance(value, Mapping):
        entries = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if isinstance(item, str) and item.strip():
                entries.append((item.strip(), None))
            elif isinstance(item, Mapping) and len(item) == 1:
                entries += [(str(k), v) for k, v in item.items()]
            else:
                raise ValueError(
                    f"mcpServers[{index}] must be a server name or a one-key mapping "
                    f"`name: {{command: ...}}`, got {describe(item)}"
                )
    else:
        raise ValueError(
            f"mcpServers must be a list of server names or definitions, got {describe(value)}"
        )
    servers: dict[str, Any] = {}
    for name, raw in entries:
        if isinstance(raw, str):  # an entry `name: name` is a reference too
            raw = None
        try:
            servers[name] = None if raw is None else parse_server(name, raw, "", expand=False)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None
    return servers
