"""A tool with an output schema (``AgentTool(output_type=...)``) whose reply ends without an
answer: a pause for confirmation, a hook's ``continue: false``, a prompt a hook refused, a spent
budget. The official ``mcp`` SDK client checks every result that is not an error against the
tool's output schema (and raises when structured content is missing), so each of these must be a
tool error (``isError`` true) saying what happened, never a plain result without content. Driven
by the SDK's client against our server in process; the hooks are real command scripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.events import ConfirmResult, UserConfirmResultEvent
from agentscope_teams.mcp_server import AgentTool, McpAgentServer
from agentscope_teams.store.memory import InMemoryStore

from ..agent.output_helpers import Report, guarded_tools, make_agent

REPORT = {"findings": [], "summary": "nothing found"}


def _text(result: Any) -> str:
    return "".join(block.text for block in result.content)


def _script(folder: Path, name: str, body: str) -> str:
    path = folder / name
    path.write_text("#!/bin/bash\ncat > /dev/null\n" + body)
    path.chmod(0o755)
    return str(path)


async def test_a_typed_tool_reports_a_pause_for_confirmation_as_a_tool_error(
    tmp_path: Path,
) -> None:
    """The SDK client used to raise "has an output schema but did not return structured
    content"; the pause stays stored and a confirmation through the Python API answers."""
    model = ScriptedModel(
        [ScriptedModel.tool_call("deploy", {"target": "prod"}), ScriptedModel.final_result(REPORT)]
    )
    async with make_agent("memory://", tmp_path, model) as agent:
        server = McpAgentServer([AgentTool(agent, output_type=Report)])
        async with mcp.Client(server.server, cache=None) as client:
            paused = await client.call_tool("lead", {"message": "deploy", "session_id": "p1"})
        ctx = RuntimeContext(session_id="p1")
        state = await agent.get_agent_state(ctx)
        [call_id] = state.awaiting_confirmation
        meta = paused.meta["agentscope_teams"]
        confirm = UserConfirmResultEvent(
            reply_id=meta["reply_id"], results=[ConfirmResult(tool_call_id=call_id, confirmed=True)]
        )
        done = await agent.call(confirm, ctx, output_type=Report)
    assert paused.is_error and paused.structured_content is None
    assert "awaits confirmation" in _text(paused) and "deploy" in _text(paused)
    assert meta["status"] == "awaiting_confirmation" and meta["tool_calls"] == ["deploy"]
    assert meta["session_id"] == "p1"
    assert done.metadata["output"] == REPORT


async def test_an_untyped_tool_keeps_a_pause_as_a_plain_result(tmp_path: Path) -> None:
    """The control: without an output schema a pause is not an error (nothing to match)."""
    model = ScriptedModel([ScriptedModel.tool_call("deploy", {"target": "prod"})])
    async with make_agent("memory://", tmp_path, model) as agent:
        server = McpAgentServer([AgentTool(agent)])
        async with mcp.Client(server.server, cache=None) as client:
            paused = await client.call_tool("lead", {"message": "deploy", "session_id": "p2"})
    assert not paused.is_error
    assert paused.meta["agentscope_teams"]["status"] == "awaiting_confirmation"


def _hooked_agent(tmp_path: Path, model: ScriptedModel, hooks: dict[str, Any]) -> HarnessAgent:
    return HarnessAgent(
        "lead",
        model,
        "sys",
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
        workspace_scope="shared",
        tools=guarded_tools(),
        hooks=hooks,
    )


async def _call_typed(agent: HarnessAgent, message: str) -> Any:
    async with agent:
        server = McpAgentServer([AgentTool(agent, output_type=Report)])
        async with mcp.Client(server.server, cache=None) as client:
            return await client.call_tool("lead", {"message": message, "session_id": "s1"})


async def test_a_typed_tool_reports_a_hook_stop_as_a_tool_error(tmp_path: Path) -> None:
    """A PreToolUse hook answering ``continue: false`` ends the reply with its stopReason."""
    stop = json.dumps({"continue": False, "stopReason": "frozen for the release"})
    command = _script(tmp_path, "stop.sh", f"echo '{stop}'\n")
    hooks = {"PreToolUse": [{"matcher": "deploy", "hooks": [{"command": command}]}]}
    model = ScriptedModel(
        [ScriptedModel.tool_call("deploy", {"target": "prod"}), ScriptedModel.final_result(REPORT)]
    )
    result = await _call_typed(_hooked_agent(tmp_path, model, hooks), "deploy")
    assert result.is_error and result.structured_content is None
    assert "frozen for the release" in _text(result)
    assert result.meta["agentscope_teams"]["status"] == "stopped_by_hook"


async def test_a_typed_tool_reports_a_refused_prompt_as_a_tool_error(tmp_path: Path) -> None:
    """A UserPromptSubmit hook that exits 2 refuses the prompt: no answer, so a tool error."""
    command = _script(tmp_path, "refuse.sh", "echo 'no secrets in prompts' >&2\nexit 2\n")
    hooks = {"UserPromptSubmit": [{"hooks": [{"command": command}]}]}
    model = ScriptedModel([ScriptedModel.final_result(REPORT)])
    result = await _call_typed(_hooked_agent(tmp_path, model, hooks), "the key is hunter2")
    assert result.is_error and result.structured_content is None
    assert "no secrets in prompts" in _text(result)
    assert result.meta["agentscope_teams"]["status"] == "stopped_by_hook"
