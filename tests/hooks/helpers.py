"""Helpers of the hook tests: real hook scripts written to files, and an agent to run them."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from agentscope_teams.compose import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.store import InMemoryStore

CTX = RuntimeContext(session_id="s1", user_id="alice")
HAS_JQ = shutil.which("jq") is not None


def script(folder: Path, name: str, body: str, *, python: bool = False) -> str:
    """Write an executable hook script; returns the command that runs it."""
    path = folder / name
    shebang = f"#!{sys.executable}\n" if python else "#!/bin/bash\nset -u\n"
    path.write_text(shebang + body)
    path.chmod(0o755)
    return str(path)


def command_hooks(event: str, command: str, matcher: str = "", timeout: float = 60) -> dict:
    """Claude Code's hooks shape for one command."""
    return {
        event: [
            {
                "matcher": matcher,
                "hooks": [{"type": "command", "command": command, "timeout": timeout}],
            }
        ]
    }


def agent(tmp_path: Path, model: ScriptedModel, **kw: Any) -> HarnessAgent:
    kw.setdefault("store", InMemoryStore())
    return HarnessAgent(
        "lead", model, "sys", workspace=tmp_path / "ws", workspace_scope="shared", **kw
    )


def tool_results(request: ModelRequest) -> list[str]:
    """The tool result texts the model read in ``request``."""
    found: list[str] = []
    for msg in request.messages:
        if isinstance(msg.content, list):
            found += [b.output for b in msg.content if getattr(b, "type", "") == "tool_result"]
    return found


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
