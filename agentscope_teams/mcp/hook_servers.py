"""``HookServers``: an agent's MCP servers as its ``mcp_tool`` hooks reach them
(:class:`~agentscope_teams.hooks.McpServers`).

A hook calls the servers of the :class:`~.extension.McpExtension` of the agent firing the event,
on the caller's own connection in the pool (started if this user has none yet, as a model's call
of one of its tools would be). Any tool the server lists may be called, not only those the
agent's ``tools:`` offer the model: a hook is configuration, not a model's choice. A tool the
server does not list is refused before any call; the pool's errors (the server did not start,
stopped, did not answer within its ``call_timeout``) are raised as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..context import RuntimeContext
from ..errors import ToolError
from ..hooks import McpAnswer
from .pool import McpPool, NamedServer
from .tools import render_result

__all__ = ["HookServers"]


class HookServers:
    """``servers`` of ``pool`` for the caller ``ctx`` (one agent call)."""

    def __init__(self, servers: Sequence[NamedServer], pool: McpPool, ctx: RuntimeContext) -> None:
        self.servers = {s.name: s for s in servers}
        self.pool, self.ctx = pool, ctx

    def names(self) -> list[str]:
        return list(self.servers)

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> McpAnswer:
        named = self.servers[server]
        listing = await self.pool.ensure_listing(named, self.ctx)
        tools = [t.name for t in listing]
        if tool not in tools:
            raise ToolError(
                f"MCP server {server!r} has no tool {tool!r}; its tools: {', '.join(tools) or 'none'}"
            )
        result = await self.pool.call(named, tool, arguments, self.ctx)
        return McpAnswer(render_result(result), bool(result.is_error))
