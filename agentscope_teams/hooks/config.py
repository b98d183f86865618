"""Hook configuration: Claude Code's ``hooks`` shape read into :class:`Hook` entries.

The shape is ``{Event: [{"matcher": REGEX, "hooks": [ENTRY, ...]}]}``, as in a spec's ``hooks:``
frontmatter or a project's ``.claude/settings.json``. An entry's ``type`` is Claude Code's:

- ``command`` (the default): ``command``, ``timeout`` (default 600 s);
- ``http``: ``url`` (http/https), ``headers``, ``allowedEnvVars``, ``timeout`` (default 600 s);
- ``prompt``: ``prompt``, ``model`` (a model name, as a spec's ``model:``; default: the model of
  the agent the event belongs to), ``timeout`` (default 30 s); only on the events Claude Code runs
  them for (:data:`MODEL_EVENTS`), elsewhere left out with a warning;
- ``agent``: as ``prompt`` (default timeout 60 s), judged by a verifier agent with read-only file
  tools that the agent firing the event runs; where no agent fires it (a team client's
  ``TaskCreated`` / ``TaskCompleted``) it is not run (a warning at load);
- ``mcp_tool``: ``server`` (a name in the agent's ``.mcp.json`` / ``mcpServers``), ``tool``,
  ``input`` (a mapping; its strings may hold ``${path}`` into the event JSON), ``timeout``
  (default 600 s); run on the servers of the agent firing the event (:mod:`.mcp_tool`); where no
  agent fires it (a team client's ``TaskCreated`` / ``TaskCompleted``) no server is connected
  (a warning at load; when it fires, a non-blocking error).

A hook that cannot run or give its answer (an ``agent`` hook no agent runs; an ``mcp_tool`` hook
whose server is not connected, fails or times out; an http hook whose URL the settings'
``allowedHttpHookUrls`` do not allow, :mod:`.policy`) denies every call it selects on
``PreToolUse`` / ``PermissionRequest`` (:data:`GUARD_EVENTS`), so a guard never silently lets
calls through; on other events it is a non-blocking error.

Fields every type may have, as Claude Code documents them (``docs/hooks.md``):

- ``if``: a permission rule (``"Bash(git *)"``, ``"Edit(src/**)"``) the tool call must match for
  the hook to be started (:mod:`.condition`); on an event without a tool call (not in
  :data:`~.condition.TOOL_EVENTS`) the hook never runs and is left out with a warning; a rule
  that does not parse is an error; a rule naming no known tool (a typo) is a warning naming the
  closest names, and on a guard event the hook denies the calls its matcher selects (unless the
  agent has a tool of that name);
- ``async`` (``command`` hooks): run in the background (:mod:`.background`): the event does not
  wait and its decisions are not heeded (on a guard event a warning at load says it cannot
  deny); on another type a warning, and it runs in the foreground;
- ``asyncRewake`` (``command`` hooks): as ``async``, and an exit 2 wakes the model: its stderr
  is given to the model at the start of the session's next call (:mod:`.background`);
- ``once``: Claude Code honours it only in a skill's frontmatter, whose hooks are not loaded here;
  in settings files and spec frontmatter it ignores it, and so do we, with a warning;
- ``statusMessage``: what Claude Code's spinner shows while the hook runs; logged (INFO) when it
  starts.

``async``, ``asyncRewake`` and ``once`` must be booleans, ``statusMessage`` a string.
Python callables (``HarnessAgent(hooks=...)``) use ``{Event: [(matcher, callable), ...]}``. An
unknown event or ``type``, or a malformed entry, is a
:class:`~agentscope_teams.errors.ConfigurationError` naming the source, the entry and the field.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from .condition import TOOL_EVENTS, parse_condition, unknown_tool
from .hook import DEFAULT_TIMEOUT, Hook, HookCallable

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_TIMEOUT",
    "DEFAULT_TIMEOUTS",
    "ELSEWHERE_EVENTS",
    "EVENTS",
    "GUARD_EVENTS",
    "HANDLER_TYPES",
    "MODEL_EVENTS",
    "Hook",
    "HookCallable",
    "HookMap",
    "hooks_from_callables",
    "hook_field_notes",
    "mcp_hook_servers",
    "parse_hooks",
]

EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
)
"""The events a hook may be registered for (Claude Code's names)."""

ELSEWHERE_EVENTS = (
    "Notification",
    "PermissionDenied",
    "PostToolBatch",
    "StopFailure",
    "PostCompact",
    "Setup",
    "UserPromptExpansion",
    "Elicitation",
    "ElicitationResult",
    "WorktreeCreate",
    "WorktreeRemove",
    "ConfigChange",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
)
"""Claude Code events that never happen here (no desktop notification, config reload, ...): their
hooks are left out with a warning (``specs check --strict``: an error), so a project written for
Claude Code still runs; any other unknown name is a mistake and an error."""

DEFAULT_TIMEOUTS = {"prompt": 30.0, "agent": 60.0}
"""Claude Code's default timeouts of the model hook types (seconds)."""

HANDLER_TYPES = ("command", "http", "prompt", "agent", "mcp_tool")
"""Claude Code's hook ``type`` values (all of them are run here)."""

AGENTLESS_EVENTS = ("TaskCreated", "TaskCompleted")
"""Events a team client fires outside any agent: no verifier agent runs their agent hooks, and
no MCP server is connected for their mcp_tool hooks."""

MODEL_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
)
"""The events Claude Code runs ``prompt`` and ``agent`` hooks for (of those that happen here)."""

GUARD_EVENTS = ("PreToolUse", "PermissionRequest")
"""Events whose hooks decide whether a call runs: a hook of a type not run here denies there."""

HookMap = dict[str, list[Hook]]


def _fail(source: Path | str | None, where: str, what: str) -> ConfigurationError:
    origin = str(source) if source is not None else "hooks"
    field = f"hooks.{where}" if where else "hooks"
    return ConfigurationError(f"{origin}: {field}: {what}")


def parse_hooks(
    data: Any, source: Path | str | None = None, *, rename: Mapping[str, str] | None = None
) -> HookMap:
    """Read Claude Code's ``hooks`` mapping; ``rename`` maps event names (a subagent spec's
    ``Stop`` is ``SubagentStop``)."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise _fail(source, "", "expected a mapping of event name to a list of matcher groups")
    found: HookMap = {}
    for event, groups in data.items():
        name = (rename or {}).get(event, event)
        if name in ELSEWHERE_EVENTS:
            where = str(source) if source is not None else "hooks"
            log.warning("%s: hooks.%s: this Claude Code event never happens here; its "
                        "hooks never run", where, event)  # fmt: skip
            continue
        if name not in EVENTS:
            raise _fail(source, str(event), f"unknown event; use one of {', '.join(EVENTS)}")
        if not isinstance(groups, Sequence) or isinstance(groups, str):
            raise _fail(source, str(event), "expected a list of {matcher, hooks} entries")
        for i, group in enumerate(groups):
            if not isinstance(group, Mapping) or not isinstance(group.get("hooks"), list):
                raise _fail(source, f"{event}[{i}]", "expected {matcher: ..., hooks: [...]}")
            matcher = str(group.get("matcher") or "")
            for j, entry in enumerate(group["hooks"]):
                hook = _entry(entry, name, matcher, source, f"{event}[{i}].hooks[{j}]")
                if hook is not None:
                    found.setdefault(name, []).append(hook)
    return found


def _entry(
    entry: Any, event: str, matcher: str, source: Path | str | None, where: str
) -> Hook | None:
    """One ``{type: ..., ...}`` entry as a :class:`Hook` (None: left out with a warning)."""
    if not isinstance(entry, Mapping):
        raise _fail(
            source, where, "expected {type: command | http | prompt | agent | mcp_tool, ...}"
        )
    kind = entry.get("type", "command")
    if kind not in HANDLER_TYPES:
        raise _fail(source, where, f"unknown type {kind!r}; use one of {', '.join(HANDLER_TYPES)}")
    path = Path(source) if source is not None else None
    timeout = _timeout(entry, DEFAULT_TIMEOUTS.get(kind, DEFAULT_TIMEOUT), source, where)
    common = _common_fields(entry, event, kind, source, where)
    if common is None:
        return None
    base = Hook(event, matcher, timeout=timeout, source=path, kind=kind, **common)
    if kind == "command":
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise _fail(source, where, "command must be a non-empty string")
        return replace(base, command=command)
    if kind == "http":
        return replace(base, **_http_fields(entry, source, where))
    if kind in ("prompt", "agent") and event not in MODEL_EVENTS:
        log.warning("%s: hooks.%s: Claude Code runs %s hooks only for %s; this one never runs",
                    source or "hooks", where, kind, ", ".join(MODEL_EVENTS))  # fmt: skip
        return None
    if kind == "mcp_tool":
        return replace(base, **_mcp_fields(entry, event, source, where))
    prompt, model = entry.get("prompt"), entry.get("model")
    if not isinstance(prompt, str) or not prompt.strip():
        raise _fail(source, where, f"a {kind} hook needs prompt: a non-empty string")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise _fail(source, where, "model must be a model name such as 'haiku'")
    if kind == "agent" and event in AGENTLESS_EVENTS:
        log.warning("%s: hooks.%s: agent hooks of %s are not run here (no agent fires it)",
                    source or "hooks", where, event)  # fmt: skip
    return replace(base, prompt=prompt, model=model)


def _mcp_fields(entry: Mapping[str, Any], event: str, source: Any, where: str) -> dict[str, Any]:
    """``server``, ``tool`` and ``input`` of an mcp_tool entry, checked."""
    server, tool, given = entry.get("server"), entry.get("tool"), entry.get("input", {})
    if not isinstance(server, str) or not server.strip():
        raise _fail(source, where, "an mcp_tool hook needs server: the name of an MCP server")
    if not isinstance(tool, str) or not tool.strip():
        raise _fail(source, where, "an mcp_tool hook needs tool: the name of a tool of its server")
    if not isinstance(given, Mapping):
        raise _fail(source, where, "input must be a mapping of the tool's argument names to values")
    if event in AGENTLESS_EVENTS:
        log.warning("%s: hooks.%s: no agent fires %s, so no MCP server is connected for this "
                    "mcp_tool hook; it fails (non-blocking) each time", source or "hooks",
                    where, event)  # fmt: skip
    return {"server": server, "tool": tool, "input": dict(given)}


def _common_fields(
    entry: Mapping[str, Any], event: str, kind: str, source: Any, where: str
) -> dict[str, Any] | None:
    """``if``, ``async``, ``once`` and ``statusMessage`` of an entry as :class:`Hook` fields
    (see the module docstring); None: the hook never runs (an ``if`` on an event without a tool
    call)."""
    origin = source or "hooks"
    for key in ("async", "asyncRewake", "once"):
        if key in entry and not isinstance(entry[key], bool):
            raise _fail(source, f"{where}.{key}", "must be true or false")
    status = entry.get("statusMessage")
    if status is not None and not isinstance(status, str):
        raise _fail(source, f"{where}.statusMessage", "must be a string (the text shown)")
    found: dict[str, Any] = {"status_message": status or None}
    if entry.get("once"):
        log.warning("%s: hooks.%s.once: Claude Code honours once only in a skill's frontmatter; "
                    "here, as there, it is ignored and the hook runs every time", origin, where)  # fmt: skip
    if entry.get("asyncRewake"):  # runs in the background too, as in Claude Code
        found["rewake"] = _background(kind, event, origin, f"{where}.asyncRewake")
        found["background"] = found["rewake"]
    elif entry.get("async"):
        found["background"] = _background(kind, event, origin, f"{where}.async")
    if "if" in entry:
        condition = _condition(entry["if"], event, source, where)
        if condition is None:
            return None
        found.update(condition)
    return found


def _condition(text: Any, event: str, source: Any, where: str) -> dict[str, Any] | None:
    """The :class:`Hook` fields of an ``if`` (None: the hook never runs, on an event without a
    tool call); an ``if`` naming no known tool is a warning (a guard then fails closed)."""
    origin = source or "hooks"
    try:
        rule = parse_condition(text)
    except ValueError as exc:
        raise _fail(source, f"{where}.if", str(exc)) from None
    if event not in TOOL_EVENTS:
        log.warning("%s: hooks.%s.if: %s has no tool call to match, so this hook never runs "
                    "(as in Claude Code); if applies to %s", origin, where, event,
                    ", ".join(TOOL_EVENTS))  # fmt: skip
        return None
    unknown = unknown_tool(rule)
    if unknown is not None:
        log.warning("%s: hooks.%s.if: %s; %s", origin, where, unknown, _unknown_effect(event))
    return {"rule": rule, "condition": text.strip(), "unknown_tool": unknown}


def _unknown_effect(event: str) -> str:
    """What a hook whose ``if`` names no known tool does on ``event``."""
    if event in GUARD_EVENTS:
        return (
            f"as a {event} guard that cannot run it denies every call its matcher selects, "
            "unless the agent has a tool of that name; fix the name"
        )
    return "the hook never runs, unless the agent has a tool of that name; fix the name"


def _background(kind: str, event: str, origin: Any, field: str) -> bool:
    """Whether an ``async: true`` (or ``asyncRewake: true``) entry runs in the background (a
    warning where it cannot do what a foreground hook would); ``field`` names the entry's key."""
    if kind != "command":
        log.warning("%s: hooks.%s: only command hooks run in the background (Claude Code); "
                    "this %s hook runs in the foreground", origin, field, kind)  # fmt: skip
        return False
    if event in GUARD_EVENTS:
        log.warning("%s: hooks.%s: an async %s hook cannot deny or block the call (it is "
                    "not waited for, as in Claude Code); make it synchronous if it is a guard",
                    origin, field, event)  # fmt: skip
    return True


def _timeout(entry: Mapping[str, Any], default: float, source: Any, where: str) -> float:
    timeout = entry.get("timeout", default)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise _fail(source, where, "timeout must be a positive number of seconds")
    return float(timeout)


def _http_fields(entry: Mapping[str, Any], source: Any, where: str) -> dict[str, Any]:
    """``url``, ``headers`` and ``allowedEnvVars`` of an http entry, checked."""
    url = entry.get("url")
    if not isinstance(url, str) or not re.match(r"https?://[^/\s]+", url):
        raise _fail(source, where, "an http hook needs url: an http:// or https:// URL")
    headers = entry.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise _fail(source, where, "headers must be a mapping of header name to string value")
    allowed = entry.get("allowedEnvVars") or []
    if not isinstance(allowed, list) or not all(isinstance(v, str) for v in allowed):
        raise _fail(source, where, "allowedEnvVars must be a list of environment variable names")
    return {"url": url, "headers": tuple(headers.items()), "allowed_env": tuple(allowed)}


def mcp_hook_servers(data: Any) -> list[tuple[str, str]]:
    """For ``specs check --strict``: ``(entry, server)`` for each ``mcp_tool`` entry of ``data``
    (Claude Code's ``hooks`` shape, already loadable)."""
    return [
        (where, str(entry.get("server")))
        for where, _, entry in _entries(data)
        if entry.get("type") == "mcp_tool"
    ]


def hook_field_notes(data: Any) -> list[str]:
    """For ``specs check --strict``: a line per entry of ``data`` (Claude Code's ``hooks`` shape,
    already loadable) not run as written: its ``if`` is on an event without a tool call (it never
    runs) or names no known tool (a typo), or it has ``once: true`` (ignored outside a skill's
    frontmatter, as Claude Code does)."""
    return [
        f"{where}: {note}" for where, event, entry in _entries(data)
        for note in _strict_notes(event, entry)
    ]  # fmt: skip


def _entries(data: Any) -> list[tuple[str, str, Mapping[str, Any]]]:
    """``(where, event, entry)`` for each hook entry of ``data`` that is a mapping."""
    found: list[tuple[str, str, Mapping[str, Any]]] = []
    for event, groups in (data or {}).items():
        for i, group in enumerate(groups if isinstance(groups, list) else []):
            entries = group.get("hooks") if isinstance(group, Mapping) else None
            for j, entry in enumerate(entries if isinstance(entries, list) else []):
                if isinstance(entry, Mapping):
                    found.append((f"hooks.{event}[{i}].hooks[{j}]", str(event), entry))
    return found


def _strict_notes(event: str, entry: Mapping[str, Any]) -> list[str]:
    notes: list[str] = []
    if "if" in entry and event not in TOOL_EVENTS:
        notes.append(f"if on {event}, which has no tool call: this hook never runs")
    elif "if" in entry:
        unknown = unknown_tool(parse_condition(entry["if"]))
        if unknown is not None:
            notes.append(f"if {entry['if']!r}: {unknown}; {_unknown_effect(event)}")
    if entry.get("once") is True:
        notes.append("once is ignored (Claude Code honours it only in a skill's frontmatter)")
    return notes


def hooks_from_callables(data: Mapping[str, Any] | None) -> HookMap:
    """Read ``{Event: [(matcher, callable), ...]}`` (a bare callable matches everything)."""
    found: HookMap = {}
    for event, entries in (data or {}).items():
        if event not in EVENTS:
            raise _fail(None, str(event), f"unknown event; use one of {', '.join(EVENTS)}")
        for i, entry in enumerate(entries if isinstance(entries, Sequence) else [entries]):
            matcher, function = ("", entry) if callable(entry) else tuple(entry)
            if not callable(function) or not isinstance(matcher, str | None):
                raise _fail(None, f"{event}[{i}]", "expected (matcher, callable) or a callable")
            found.setdefault(event, []).append(Hook(event, matcher or "", function=function))
    return found


def merged(*maps: HookMap) -> HookMap:
    """The hooks of every map, event by event, in order."""
    out: HookMap = {}
    for m in maps:
        for event, hooks in m.items():
            out.setdefault(event, []).extend(hooks)
    return out
