"""A reply a PreToolUse hook deferred, through our MCP server: the tool result says the call was
deferred and why (it is not the agent's answer), and the next call on the session with an empty
message runs the hook again and the call. A real command hook decides (what the file ``decision``
says); a real MCP client drives ``agentscope-teams mcp-serve`` over stdio, and the in-process
server for a tool with an output schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp
from mcp.client.stdio import StdioServerParameters, stdio_client

from agentscope_teams import HarnessAgent, ScriptedModel
from agentscope_teams.mcp_server import AgentTool, McpAgentServer
from agentscope_teams.store.memory import InMemoryStore

from ..agent.output_helpers import Report
from ..cli.conftest import CLI, Cli

#: Answers what ``decision`` next to it says for Write, with the reason "policy: DECISION".
HOOK = """#!/bin/bash
cat > /dev/null
d="$(cat "$(dirname "$0")/decision")"
echo "{\\"hookSpecificOutput\\": {\\"hookEventName\\": \\"PreToolUse\\", \
\\"permissionDecision\\": \\"$d\\", \\"permissionDecisionReason\\": \\"policy: $d\\"}}"
"""
WRITE = {"name": "write_file", "input": {"path": "a.txt", "content": "x"}}
REPORT = {"findings": [], "summary": "nothing found"}


def _hook(folder: Path) -> dict[str, Any]:
    """Write the hook to ``folder``; its settings (``hooks`` of settings.json)."""
    path = folder / "decide.sh"
    path.write_text(HOOK)
    path.chmod(0o755)
    command = {"type": "command", "command": str(path)}
    return {"PreToolUse": [{"matcher": "Write", "hooks": [command]}]}


def _project(root: Path) -> Path:
    """A trusted project whose PreToolUse hook decides Write; its specs folder."""
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (root / ".claude" / "settings.json").write_text(json.dumps({"hooks": _hook(root)}))
    return agents


def _text(result: Any) -> str:
    return "".join(block.text for block in result.content)


def test_a_deferred_call_is_a_result_saying_so_and_an_empty_message_resumes_it(
    cli: Cli, tmp_path: Path
) -> None:
    root = tmp_path / "proj"
    specs = _project(root)
    script = root / "script.json"
    script.write_text(json.dumps({"lead": [{"tool_calls": [WRITE]}, "written"]}))
    args = ["--store", cli.url, "mcp-serve", "--specs", str(specs), "--trust-project"]
    args += ["--model", f"scripted:{script}", "--user", "alice"]
    params = StdioServerParameters(command=str(CLI), args=args, env=cli.env(), cwd=str(root))
    (root / "decision").write_text("defer")

    async def client() -> list[Any]:
        async with mcp.Client(stdio_client(params), cache=None) as c:
            stopped = await c.call_tool("lead", {"message": "write it"})
            written = (root / "a.txt").exists()
            (root / "decision").write_text("allow")
            resumed = await c.call_tool("lead", {"message": ""})
            again = await c.call_tool("lead", {"message": ""})  # nothing left to resume
            return [stopped, written, resumed, again]

    stopped, written_early, resumed, again = anyio.run(client)
    assert not written_early  # the call did not run
    assert not stopped.is_error
    text = _text(stopped)
    assert text.startswith("Deferred: ") and "write_file" in text and "policy: defer" in text
    assert "written" not in text
    [call] = stopped.structured_content["deferred"]
    assert call["name"] == "write_file" and call["reason"] == "policy: defer"
    meta = stopped.meta["agentscope_teams"]
    assert meta["status"] == "tool_deferred" and meta["deferred"] == [call]
    assert meta["session_id"] in text  # the session to call again

    assert not resumed.is_error and _text(resumed) == "written"
    assert resumed.meta["agentscope_teams"]["session_id"] == meta["session_id"]
    assert (root / "a.txt").read_text() == "x"
    assert again.is_error and "has none" in _text(again)


async def test_a_typed_tool_reports_a_deferral_as_a_tool_error_then_answers(
    tmp_path: Path,
) -> None:
    """A tool with an output schema cannot return a deferral as its structured result (the
    client checks it against the schema): it is a tool error saying so; the resume answers."""
    (tmp_path / "decision").write_text("defer")
    model = ScriptedModel(
        [ScriptedModel.tool_call("write_file", WRITE["input"]), ScriptedModel.final_result(REPORT)]
    )
    agent = HarnessAgent(
        "lead",
        model,
        "sys",
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
        workspace_scope="shared",
        hooks=_hook(tmp_path),
    )
    async with agent:
        server = McpAgentServer([AgentTool(agent, output_type=Report)])
        async with mcp.Client(server.server, cache=None) as client:
            stopped = await client.call_tool("lead", {"message": "review", "session_id": "t1"})
            (tmp_path / "decision").write_text("allow")
            done = await client.call_tool("lead", {"message": "", "session_id": "t1"})
    assert stopped.is_error and _text(stopped).startswith("Deferred: ")
    assert stopped.meta["agentscope_teams"]["status"] == "tool_deferred"
    assert stopped.structured_content is None
    assert not done.is_error and done.structured_content == REPORT
    assert (tmp_path / "ws" / "a.txt").read_text() == "x"
