"""A small stdio MCP server for the tests: echo (with its pid), a failing tool, a crash, a sleep."""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("echo")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Echo the text back, with the pid of this server."""
    return f"echo: {text} (pid {os.getpid()}, token {os.environ.get('ECHO_TOKEN', '-')})"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(reason)


@server.tool()
def delete_everything(path: str) -> str:
    """Pretends to delete ``path`` (not annotated: destructive by default, so it asks)."""
    return f"deleted {path}"


@server.tool(annotations=ToolAnnotations(destructive_hint=False))
def crash() -> str:
    """Exits the server process (a crash)."""
    print("echo server: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool(annotations=ToolAnnotations(destructive_hint=False))
async def sleep(seconds: float) -> str:
    """Sleeps, then answers."""
    await anyio.sleep(seconds)
    return "slept"


if __name__ == "__main__":
    server.run()
