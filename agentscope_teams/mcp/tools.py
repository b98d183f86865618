"""MCP tools as :class:`~agentscope_teams.tools.Tool`: names, selection and results.

A server's tool ``t`` is published as ``mcp__<server>__<t>`` (characters a tool name cannot hold
become ``_``; a name longer than 64 characters is cut and given a short digest) with the server's
own JSON schema and description; two tools of one server that come out with the same name keep
the first, with a warning. Annotations are untrusted hints (the MCP specification says so): unless
the server's configuration says ``trustAnnotations: true``, every tool is treated as one that writes
(refused in plan mode, confirmed in the default mode). With it, a tool marked ``readOnlyHint`` is
read-only (allowed in plan mode); one that is not read-only and not marked ``destructiveHint:
false`` requires confirmation in the default permission mode, like Claude Code.

A result's text blocks are joined; images, audio and resources are described in one line each; a
result with only structured content is shown as JSON. An ``isError`` result is a tool error the
model reads.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from typing import Any

from ..context import current_context
from ..errors import ToolError
from ..tools import Tool
from .pool import McpPool, NamedServer

log = logging.getLogger(__name__)

PREFIX = "mcp__"
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def mcp_tool_name(server: str, tool: str) -> str:
    """The name the model sees for ``tool`` of ``server``."""
    name = f"{PREFIX}{server}__{_BAD.sub('_', tool)}"
    if len(name) <= 64:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[:55]}_{digest}"


def is_mcp_name(name: str) -> bool:
    return name.startswith(PREFIX)


def selects(entries: Sequence[str] | None, server: str, tool_name: str) -> bool:
    """Whether a ``tools:`` list picks ``tool_name`` of ``server``: ``None`` picks everything,
    ``mcp__<server>`` every tool of the server, else the exact name (or a glob of it)."""
    if entries is None:
        return True
    for entry in entries:
        if entry == f"{PREFIX}{server}" or entry == tool_name:
            return True
        if any(c in entry for c in "*?[") and fnmatchcase(tool_name, entry):
            return True
    return False


def names_servers(entries: Iterable[str]) -> set[str]:
    """The server names an MCP entry of a ``tools:`` list refers to (``mcp__git__x`` -> git)."""
    found: set[str] = set()
    for entry in entries:
        if is_mcp_name(entry):
            found.add(entry[len(PREFIX) :].split("__", 1)[0])
    return found


def build_tools(pool: McpPool, server: NamedServer, listing: Iterable[Any]) -> list[Tool]:
    """One :class:`Tool` per listed MCP tool, calling it on the caller's own connection."""
    tools: list[Tool] = []
    seen: set[str] = set()
    for spec in listing:
        name = mcp_tool_name(server.name, spec.name)
        if name in seen:
            log.warning(
                "MCP tool %r of server %r is left out: another of its tools is published as %s",
                spec.name,
                server.name,
                name,
            )
            continue
        seen.add(name)
        tools.append(_tool(pool, server, spec, name))
    return tools


def _tool(pool: McpPool, server: NamedServer, spec: Any, name: str) -> Tool:
    remote = spec.name

    async def run(**arguments: Any) -> str:
        result = await pool.call(server, remote, arguments, current_context())
        text = render_result(result)
        if result.is_error:
            raise ToolError(f"{name} failed: {text or 'the server gave no reason'}")
        return text

    notes = spec.annotations if server.config.trust_annotations else None
    read_only = bool(notes is not None and notes.read_only_hint)
    destructive = notes is None or notes.destructive_hint is not False
    schema = dict(spec.input_schema or {"type": "object", "properties": {}})
    schema.setdefault("type", "object")
    description = spec.description or spec.title or f"{remote} (MCP server {server.name})"
    return Tool(
        name=name,
        description=description,
        parameters=schema,
        func=run,
        read_only=read_only,
        concurrency_safe=read_only,
        requires_confirmation=not read_only and destructive,
    )


def render_result(result: Any) -> str:
    """The text the model reads for a ``CallToolResult``."""
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            size = len(block.data or "") * 3 // 4
            parts.append(f"[{kind} {block.mime_type}, about {size} bytes]")
        elif kind == "resource":
            inner = block.resource
            text = getattr(inner, "text", None)
            parts.append(text if text is not None else f"[resource {inner.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    return "\n".join(parts)
