"""One hook (:class:`Hook`): what runs, for which calls its matcher selects, and how it is named."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..state import PermissionRule

__all__ = ["DEFAULT_TIMEOUT", "Hook", "HookCallable"]

DEFAULT_TIMEOUT = 600.0
"""Seconds a command (or http, or mcp_tool) hook may run before its process group is killed (its
request, its tool call cancelled)."""

_EXACT = re.compile(r"[A-Za-z0-9_|-]+")
"""A matcher of only these characters names tools exactly (Claude Code's rule)."""

HookCallable = Callable[
    [dict[str, Any]], "Awaitable[dict[str, Any] | None] | dict[str, Any] | None"
]
"""A Python hook: gets the event dict, returns None or a decision dict (the JSON output shape)."""


@dataclass(frozen=True)
class Hook:
    """One hook: a shell ``command``, an ``http`` POST to ``url``, a ``prompt`` a model
    evaluates, an MCP ``tool`` of ``server`` (``mcp_tool``, called with ``input``), or a Python
    ``function``, for the calls its ``matcher`` selects.

    ``kind`` is Claude Code's ``type`` (``function`` for a Python hook). ``headers`` are
    ``(name, value)`` pairs whose ``$VAR`` / ``${VAR}`` are filled from ``allowed_env`` only;
    ``model`` (prompt) names the model that evaluates it. ``source`` is the file it came from
    (None: given in code, the operator's own). ``condition`` is Claude Code's ``if`` (a
    permission rule, read into ``rule``: the hook runs only for the tool calls it matches,
    :mod:`.condition`; ``unknown_tool`` says why it names no known tool, a typo the runner
    fails closed on for a guard); ``background`` is ``async: true`` (:mod:`.background`), ``rewake`` is ``asyncRewake: true``
    (in the background too; an exit 2 wakes the model at the session's next call);
    ``status_message`` is ``statusMessage``, logged when the hook starts.
    """

    event: str
    matcher: str = ""
    command: str | None = None
    function: HookCallable | None = field(default=None, compare=False)
    timeout: float = DEFAULT_TIMEOUT
    source: Path | None = None
    kind: str = "command"
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    allowed_env: tuple[str, ...] = ()
    prompt: str | None = None
    model: str | None = None
    server: str | None = None
    tool: str | None = None
    input: Mapping[str, Any] | None = field(default=None, hash=False)
    condition: str | None = None
    rule: PermissionRule | None = field(default=None, compare=False)
    unknown_tool: str | None = field(default=None, compare=False)
    background: bool = False
    rewake: bool = False
    status_message: str | None = None

    def __post_init__(self) -> None:
        if self.function is not None and self.kind == "command" and self.command is None:
            object.__setattr__(self, "kind", "function")

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
        if self.kind == "function":
            what = getattr(self.function, "__name__", "?")
        elif self.kind == "http":
            what = f"http {self.url}"
        elif self.kind == "command":
            what = str(self.command)
        elif self.kind == "mcp_tool":
            what = f"mcp_tool {self.tool!r} of server {self.server!r}"
        else:
            what = f"{self.kind} {_short(self.prompt or '')!r}"
        matcher = f"[{self.matcher}]" if self.matcher else ""
        if self.condition is not None:
            matcher += f" if {self.condition}"
        origin = f" ({self.source})" if self.source is not None and self.kind != "command" else ""
        return f"{self.event}{matcher} {what}{origin}"


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
