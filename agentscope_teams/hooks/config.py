"""Hook configuration: Claude Code's ``hooks`` shape read into :class:`Hook` entries.

The shape is ``{Event: [{"matcher": REGEX, "hooks": [{"type": "command", "command": CMD,
"timeout": SECONDS}]}]}``, as in a spec's ``hooks:`` frontmatter or a project's
``.claude/settings.json``. Python callables (``HarnessAgent(hooks=...)``) use
``{Event: [(matcher, callable), ...]}``. An unknown event or a malformed entry is a
:class:`~agentscope_teams.errors.ConfigurationError` naming the source and the entry.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_TIMEOUT",
    "ELSEWHERE_EVENTS",
    "EVENTS",
    "Hook",
    "HookCallable",
    "HookMap",
    "hooks_from_callables",
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

DEFAULT_TIMEOUT = 600.0
"""Seconds a command hook may run before its process group is killed."""

_EXACT = re.compile(r"[A-Za-z0-9_|-]+")
"""A matcher of only these characters names tools exactly (Claude Code's rule)."""

HookCallable = Callable[
    [dict[str, Any]], "Awaitable[dict[str, Any] | None] | dict[str, Any] | None"
]
"""A Python hook: gets the event dict, returns None or a decision dict (the JSON output shape)."""


@dataclass(frozen=True)
class Hook:
    """One hook: a shell ``command`` or a Python ``function``, for the calls its ``matcher`` selects.

    ``source`` is the file it came from (None: given in code, the operator's own).
    """

    event: str
    matcher: str = ""
    command: str | None = None
    function: HookCallable | None = field(default=None, compare=False)
    timeout: float = DEFAULT_TIMEOUT
    source: Path | None = None

    def matches(self, target: str | None, *alternates: str) -> bool:
        """Whether this hook applies to ``target`` (a Claude Code tool name, or the event's
        match field); ``alternates`` are other names of the same thing (our tool name).
        As in Claude Code: an empty matcher or ``*`` selects everything; one of only letters,
        digits, ``_``, ``-`` and ``|`` is a name or a ``|`` list of names, matched exactly (``Bash`` is
        not ``BashOutput``); any other is a regular expression found anywhere in the name
        (``^Notebook``, ``mcp__memory__.*``)."""
        if self.matcher in ("", "*"):
            return True
        names = [n for n in (target, *alternates) if n]
        if _EXACT.fullmatch(self.matcher):
            return any(n in self.matcher.split("|") for n in names)
        try:
            pattern = re.compile(self.matcher)
        except re.error:
            return self.matcher in names
        return any(pattern.search(n) for n in names)

    @property
    def label(self) -> str:
        """How a notice or a log line names this hook."""
        what = self.command if self.command is not None else getattr(self.function, "__name__", "?")
        matcher = f"[{self.matcher}]" if self.matcher else ""
        return f"{self.event}{matcher} {what}"


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
    path = Path(source) if source is not None else None
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
                where = f"{event}[{i}].hooks[{j}]"
                if not isinstance(entry, Mapping) or entry.get("type", "command") != "command":
                    raise _fail(source, where, "only {type: command, command: ...} is supported")
                command = entry.get("command")
                if not isinstance(command, str) or not command.strip():
                    raise _fail(source, where, "command must be a non-empty string")
                timeout = entry.get("timeout", DEFAULT_TIMEOUT)
                if (
                    not isinstance(timeout, int | float)
                    or isinstance(timeout, bool)
                    or timeout <= 0
                ):
                    raise _fail(source, where, "timeout must be a positive number of seconds")
                hook = Hook(name, matcher, command=command, timeout=float(timeout), source=path)
                found.setdefault(name, []).append(hook)
    return found


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
