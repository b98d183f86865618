"""MCP client: tools of Model Context Protocol servers for agents, subagents and team members.

Configure servers as Claude Code does (a ``.mcp.json``, a spec's ``mcpServers``) and pass them to
``HarnessAgent(..., mcp_servers=...)``; their tools appear as ``mcp__<server>__<tool>``. A
project's own servers (its ``.mcp.json``, ``mcpServers`` in its spec files) are enabled only when
the project is trusted (:mod:`.project`, :mod:`agentscope_teams.trust`). Importing
this package does not need the ``mcp`` SDK; starting a server does (``pip install
'agentscope-teams[mcp]'``). See :mod:`.pool` for the lifecycle and docs/mcp.md for the decisions.
"""

from __future__ import annotations

from .config import HttpServer, StdioServer, load_mcp_json, parse_servers
from .extension import McpExtension, McpToolset
from .pool import McpPool, NamedServer
from .tools import mcp_tool_name, render_result

__all__ = [
    "HttpServer",
    "McpExtension",
    "McpPool",
    "McpToolset",
    "NamedServer",
    "StdioServer",
    "load_mcp_json",
    "mcp_tool_name",
    "parse_servers",
    "render_result",
]
