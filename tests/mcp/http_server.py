"""A streamable-HTTP MCP server for the tests (the SDK's MCPServer, formerly FastMCP), refusing
requests without ``Authorization: Bearer <token>``. Usage: http_server.py PORT TOKEN"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes")
NOTES: dict[str, str] = {}


@server.tool(annotations=ToolAnnotations(destructive_hint=False))
def add_note(title: str, body: str) -> str:
    """Store a note."""
    NOTES[title] = body
    return f"stored {title!r} ({len(NOTES)} notes)"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_note(title: str) -> str:
    """Read a stored note."""
    return NOTES.get(title, f"no note called {title!r}")


def guarded(app: Any, token: str) -> Any:
    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"bad token"})
                return
        await app(scope, receive, send)

    return asgi


if __name__ == "__main__":
    port, token = int(sys.argv[1]), sys.argv[2]
    app = guarded(server.streamable_http_app(), token)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
