"""Running ``type: mcp_tool`` hooks: a tool of an MCP server the agent already has, called with
the hook's ``input``.

String values of ``input`` (at any depth) may hold ``${path}``: a dotted path into the event JSON
(``${tool_input.file_path}``, ``${hook_event_name}``; a number indexes a list). A string value is
put in as it is; any other value as its JSON text; a path that leads nowhere (or to ``null``) as
the empty string. The result is always a string: Claude Code documents the substitution for
string values only. Keys, and values that are not strings, are sent unchanged.

The tool's text output is read exactly as a command hook's stdout (:func:`~.outcome.from_stdout`).
The servers are those of the agent firing the event (:class:`McpServers`, given by the agent
layer; the hooks layer never starts one itself). A server the agent does not have ("not
connected"), a tool the server does not list, an ``isError`` result, a server that fails and a
timeout (the hook's ``timeout``, default 600 s) are each a non-blocking error naming the server
and the tool, except on :data:`~.config.GUARD_EVENTS`, where a guard that cannot give its answer
denies the call (fail closed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from .hook import Hook
from .outcome import HookOutcome, cannot_answer, from_stdout

__all__ = ["McpAnswer", "McpServers", "joined", "run_mcp_tool", "substitute"]

_REF = re.compile(r"\$\{([^{}]*)\}")


@dataclass(frozen=True)
class McpAnswer:
    """What an MCP tool answered: its text content, and whether it is an ``isError`` result."""

    text: str
    is_error: bool = False


class McpServers(Protocol):
    """The MCP servers of the agent firing an event, as a hook reaches them."""

    def names(self) -> Sequence[str]:
        """The names of the servers (as ``.mcp.json`` names them)."""
        ...

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> McpAnswer:
        """Call ``tool`` of ``server`` (one of :meth:`names`); raises an exception whose text says
        why it could not (the server has no such tool, did not start, stopped)."""
        ...


class _Joined:
    """Several agents' extensions' servers as one (the first that has a name serves it)."""

    def __init__(self, parts: Sequence[McpServers]) -> None:
        self.parts = list(parts)

    def names(self) -> list[str]:
        return list(dict.fromkeys(n for p in self.parts for n in p.names()))

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> McpAnswer:
        part = next(p for p in self.parts if server in p.names())
        return await part.call_tool(server, tool, arguments)


def joined(parts: Sequence[McpServers]) -> McpServers | None:
    """``parts`` as one :class:`McpServers` (None when there are none)."""
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else _Joined(parts)


def _lookup(event: Mapping[str, Any], path: str) -> Any:
    here: Any = event
    for step in path.strip().split("."):
        if isinstance(here, Mapping) and step in here:
            here = here[step]
        elif isinstance(here, list) and step.isdigit() and int(step) < len(here):
            here = here[int(step)]
        else:
            return None
    return here


def _text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def substitute(value: Any, event: Mapping[str, Any]) -> Any:
    """``value`` (a hook's ``input``) with each ``${path}`` in its strings filled from ``event``
    (see the module docstring)."""
    if isinstance(value, str):
        return _REF.sub(lambda m: _text_of(_lookup(event, m.group(1))), value)
    if isinstance(value, Mapping):
        return {k: substitute(v, event) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, event) for v in value]
    return value


def _cannot(hook: Hook, what: str) -> HookOutcome:
    """``hook`` gave no answer because of ``what`` (:func:`~.outcome.cannot_answer`)."""
    return cannot_answer(hook, what, f"fix the MCP server {hook.server!r} or the hook")


async def run_mcp_tool(
    hook: Hook, payload: dict[str, Any], servers: McpServers | None
) -> HookOutcome:
    """Call ``hook``'s tool with its ``input`` filled from ``payload``; its answer (see the module
    docstring)."""
    assert hook.server is not None and hook.tool is not None
    have = list(servers.names()) if servers is not None else []
    if servers is None or hook.server not in have:
        known = f" (its servers: {', '.join(have)})" if have else " (it has no MCP server)"
        return _cannot(hook, f"is not run: MCP server {hook.server!r} is not connected to the "
                             f"agent firing {hook.event}{known}")  # fmt: skip
    arguments = substitute(dict(hook.input or {}), payload)
    answer: McpAnswer | None = None
    try:
        with anyio.move_on_after(hook.timeout):
            answer = await servers.call_tool(hook.server, hook.tool, arguments)
    except Exception as exc:  # the server's failure is the hook's error, never the agent's crash
        return _cannot(hook, f"failed: {exc}")
    if answer is None:
        return _cannot(hook, f"timed out after {hook.timeout:g}s")
    if answer.is_error:
        shown = " ".join(answer.text.split())[:300] or "no reason given"
        return _cannot(hook, f"got an error result from the tool: {shown}")
    return from_stdout(hook.event, hook.label, answer.text)
