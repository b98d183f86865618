"""A stdio MCP server whose tools ``get.x`` and ``get_x`` are both published as ``mcp__clash__get_x``."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("clash")
READ_ONLY = ToolAnnotations(read_only_hint=True)


@server.tool(name="get.x", annotations=READ_ONLY)
def dotted() -> str:
    """The dotted one."""
    return "dotted"


@server.tool(name="get_x", annotations=READ_ONLY)
def underscored() -> str:
    """The underscored one."""
    return "underscored"


@server.tool(annotations=READ_ONLY)
def other() -> str:
    """Another tool."""
    return "other"


if __name__ == "__main__":
    server.run()
