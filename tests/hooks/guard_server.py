"""A stdio MCP server for the mcp_tool hook tests: a path guard, a context giver, a failing tool
and a slow one. Each call's arguments are appended, as a JSON line, to the file ``GUARD_LOG``
names (what the hook sent, after its ``${...}`` substitution)."""

from __future__ import annotations

import json
import os

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("guard")


def _record(tool: str, **arguments: object) -> None:
    with open(os.environ["GUARD_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"tool": tool, **arguments}) + "\n")


@server.tool()
def check_path(path: str, event: str, missing: str = "-", whole: str = "-") -> str:
    """Denies a PreToolUse call on a path under a ``protected`` folder; says nothing otherwise."""
    _record("check_path", path=path, event=event, missing=missing, whole=whole)
    if "/protected/" not in path:
        return ""
    decision = {
        "hookEventName": event,
        "permissionDecision": "deny",
        "permissionDecisionReason": f"{path} is protected by the guard server",
    }
    return json.dumps({"hookSpecificOutput": decision})


@server.tool()
def note(path: str) -> str:
    """PostToolUse context about the written file."""
    _record("note", path=path)
    context = {"hookEventName": "PostToolUse", "additionalContext": f"guard saw {path} written"}
    return json.dumps({"hookSpecificOutput": context})


@server.tool()
def finish_gate(message: str) -> str:
    """Blocks a stop whose last message has no summary (the reason is the next instruction)."""
    _record("finish_gate", message=message)
    if "summary" in message:
        return "{}"
    return json.dumps({"decision": "block", "reason": "add the summary"})


@server.tool()
def broken(path: str) -> str:
    """Always fails (an ``isError`` result)."""
    _record("broken", path=path)
    raise ToolError(f"policy store unreachable while checking {path}")


@server.tool()
async def slow(seconds: float) -> str:
    """Answers after ``seconds``."""
    _record("slow", seconds=seconds)
    await anyio.sleep(seconds)
    return "{}"


if __name__ == "__main__":
    server.run()
