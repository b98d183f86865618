"""Helpers of the MCP tests: server configurations and what the model saw."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agentscope_teams import ScriptedModel
from agentscope_teams.message import ToolResultBlock

HERE = Path(__file__).resolve().parent
#: Servers the tests configure themselves (the operator's): their annotations are believed.
ECHO = {"command": sys.executable, "args": [str(HERE / "echo_server.py")], "trustAnnotations": True}
TIME = {
    "command": sys.executable,
    "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
    "trustAnnotations": True,
}


def git_server(repo: Path) -> dict[str, Any]:
    args = ["-m", "mcp_server_git", "--repository", str(repo)]
    return {"command": sys.executable, "args": args, "trustAnnotations": True}


def results_seen(model: ScriptedModel) -> list[ToolResultBlock]:
    """Every tool result in the last request the model got (what it read)."""
    last = model.requests[-1]
    return [
        b
        for m in last.messages
        if isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]


def tool_names_offered(model: ScriptedModel, index: int = 0) -> list[str]:
    return [t.name for t in model.requests[index].tools]
