"""Our agents as MCP tools: an MCP server (official ``mcp`` SDK) whose tools are HarnessAgents.

See :mod:`.server` and ``docs/mcp.md`` ("Our agents as MCP tools").
"""

from __future__ import annotations

from .server import AgentTool, McpAgentServer, TokenTable

__all__ = ["AgentTool", "McpAgentServer", "TokenTable"]
