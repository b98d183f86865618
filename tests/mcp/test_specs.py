"""Claude Code spec files that name MCP tools load with them, from a project's .mcp.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.errors import SpecError
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.store import InMemoryStore
from agentscope_teams.subagents import SubagentSpec

from .helpers import ECHO, TIME, results_seen

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")

CLOCK = """---
name: clock
description: Tells the time anywhere. Use when the user asks for the time.
tools: Read, mcp__time__get_current_time
model: haiku
color: blue
---
You tell the time.
"""


def project(tmp_path: Path, servers: dict[str, object], agents: dict[str, str]) -> Path:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True)
    for name, text in agents.items():
        (folder / f"{name}.md").write_text(text)
    return tmp_path


def child_requests(model: ScriptedModel, prompt: str) -> list[ModelRequest]:
    return [r for r in model.requests if r.system_prompt.startswith(prompt)]


async def test_a_claude_code_spec_gets_the_mcp_tools_it_names(tmp_path: Path) -> None:
    root = project(tmp_path, {"time": TIME}, {"clock": CLOCK})
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("agent_spawn", {"agent": "clock", "task": "time in Tokyo?"}),
            ScriptedModel.tool_call("mcp__time__get_current_time", {"timezone": "Asia/Tokyo"}),
            "It is evening in Tokyo.",
            "The clock says: evening.",
        ]
    )
    lead = HarnessAgent(
        "lead",
        model,
        specs=root / ".claude" / "agents",
        mcp_servers=root / ".mcp.json",
        store=InMemoryStore(),
    )
    try:
        reply = await lead.call("What time is it in Tokyo?", CTX)
    finally:
        await lead.aclose()
    assert reply.get_text_content() == "The clock says: evening."
    first, last = child_requests(model, "You tell the time.")
    offered = [t.name for t in first.tools]
    assert "mcp__time__get_current_time" in offered and "read_file" in offered
    assert "mcp__time__convert_time" not in offered  # not named by the spec
    blocks = [b for m in last.messages if isinstance(m.content, list) for b in m.content]
    [result] = [b for b in blocks if isinstance(b, ToolResultBlock)]
    assert result.name == "mcp__time__get_current_time" and not result.is_error
    assert '"timezone": "Asia/Tokyo"' in result.output


async def test_a_spec_defines_its_own_server_inline_and_selects_all_its_tools(
    tmp_path: Path,
) -> None:
    inline = {"command": ECHO["command"], "args": ECHO["args"]}
    spec = SubagentSpec.model_validate(
        {
            "name": "echoer",
            "description": "Echoes.",
            "system_prompt": "You echo.",
            "tools": ["mcp__echo"],
            "mcpServers": [{"echo": inline}],
        }
    )
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("agent_spawn", {"agent": "echoer", "task": "echo hi"}),
            ScriptedModel.tool_call("mcp__echo__echo", {"text": "hi"}),
            "echoed",
            "done",
        ]
    )
    lead = HarnessAgent("lead", model, specs=[spec], store=InMemoryStore())
    try:
        await lead.call("go", CTX)
    finally:
        await lead.aclose()
    first = child_requests(model, "You echo.")[0]
    assert {"mcp__echo__echo", "mcp__echo__fail", "mcp__echo__crash"} <= {
        t.name for t in first.tools
    }
    assert not [t for t in model.requests[0].tools if t.name.startswith("mcp__")]  # lead: none
    assert lead.mcp.pool.live() == []  # the lead's aclose stopped the child's server too


def test_mcp_servers_in_a_spec_file_are_checked_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.md"
    bad.write_text(
        "---\ndescription: d\nmcpServers:\n  - srv:\n      type: sse\n      url: http://x\n---\nhi\n"
    )
    with pytest.raises(SpecError) as err:
        SubagentSpec.from_file(bad)
    assert err.value.line == 3 and "mcpServers.srv.type" in str(err.value)
    assert "SSE transport is not supported" in str(err.value)


async def test_env_vars_in_mcp_json_are_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ECHO_SECRET", "from-the-environment")
    server = {**ECHO, "env": {"ECHO_TOKEN": "${ECHO_SECRET}"}}
    root = project(tmp_path, {"echo": server}, {})
    model = ScriptedModel([ScriptedModel.tool_call("mcp__echo__echo", {"text": "t"}), "ok"])
    lead = HarnessAgent("lead", model, mcp_servers=root, store=InMemoryStore())
    try:
        await lead.call("go", CTX)
    finally:
        await lead.aclose()
    [result] = results_seen(model)
    assert "token from-the-environment" in result.output


async def test_a_spec_without_tools_inherits_the_lead_s_mcp_tools_only() -> None:
    spec = SubagentSpec(name="helper", description="Helps.", system_prompt="You help.")
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("agent_spawn", {"agent": "helper", "task": "help"}),
            "helped",
            "done",
        ]
    )
    lead = HarnessAgent(
        "lead",
        model,
        specs=[spec],
        mcp_servers={"echo": ECHO},
        mcp_tools=["mcp__echo__echo"],
        store=InMemoryStore(),
    )
    try:
        await lead.call("go", CTX)
    finally:
        await lead.aclose()
    lead_mcp = [t.name for t in model.requests[0].tools if t.name.startswith("mcp__")]
    child = child_requests(model, "You help.")[0]
    child_mcp = [t.name for t in child.tools if t.name.startswith("mcp__")]
    assert lead_mcp == child_mcp == ["mcp__echo__echo"]


async def test_the_project_mcp_json_of_a_claude_code_layout_is_found(tmp_path: Path) -> None:
    root = project(tmp_path, {"time": TIME}, {"clock": CLOCK})
    model = ScriptedModel(["nothing to do"])
    lead = HarnessAgent(
        "lead", model, specs=root / ".claude" / "agents", store=InMemoryStore(), trust_project=True
    )
    off = HarnessAgent(
        "lead", model, specs=root / ".claude" / "agents", mcp_servers={}, store=InMemoryStore()
    )
    try:
        assert list(lead.mcp.servers) == ["time"]
        assert off.mcp.servers == {}
    finally:
        await lead.aclose()
        await off.aclose()


async def test_disallowed_tools_removes_mcp_tools(tmp_path: Path) -> None:
    spec = (
        "---\nname: careful\ndescription: Careful.\ndisallowedTools: mcp__echo__crash\n---\nBe.\n"
    )
    root = project(tmp_path, {"echo": ECHO}, {"careful": spec})
    model = ScriptedModel(
        [ScriptedModel.tool_call("agent_spawn", {"agent": "careful", "task": "t"}), "ok", "done"]
    )
    lead = HarnessAgent(
        "lead",
        model,
        specs=root / ".claude" / "agents",
        mcp_servers=root / ".mcp.json",
        store=InMemoryStore(),
    )
    try:
        await lead.call("go", CTX)
    finally:
        await lead.aclose()
    [child] = child_requests(model, "Be.")
    offered = [t.name for t in child.tools]
    assert "mcp__echo__echo" in offered
    assert "mcp__echo__crash" not in offered
