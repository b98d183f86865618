"""Published MCP tool names name one server, a duplicate never breaks a call, and a server's
annotations count only when the operator says so."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.mcp import McpToolset, StdioServer, load_mcp_json
from agentscope_teams.store import InMemoryStore
from agentscope_teams.tools import PermissionEngine

from .helpers import ECHO, HERE, results_seen

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
UNTRUSTED_ECHO = {k: v for k, v in ECHO.items() if k != "trustAnnotations"}


@pytest.mark.parametrize("name", ["a__b", "a_", "x__", "a___b"])
def test_a_server_name_that_could_be_read_two_ways_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": {"a": ECHO, name: ECHO}}))
    with pytest.raises(ConfigurationError) as err:
        load_mcp_json(path)
    assert str(path) in str(err.value) and repr(name) in str(err.value)
    assert "without '__'" in str(err.value)


def test_a_toolset_built_in_code_refuses_the_same_names() -> None:
    server = StdioServer(command="x")
    with pytest.raises(ConfigurationError, match="invalid server name 'a__b'"):
        McpToolset({"a": server, "a__b": server})


def test_names_without_double_underscores_still_load(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": {"my_git": ECHO, "web-search": ECHO, "a_b": ECHO}}))
    assert list(load_mcp_json(path)) == ["my_git", "web-search", "a_b"]


async def test_two_tools_published_under_one_name_keep_the_agent_working(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clash = {"command": sys.executable, "args": [str(HERE / "clash_server.py")]}
    model = ScriptedModel([ScriptedModel.tool_call("mcp__clash__get_x", {}), "ok"])
    agent = HarnessAgent(
        "lead",
        model,
        store=InMemoryStore(),
        mcp_servers={"clash": {**clash, "trustAnnotations": True}},
    )
    try:
        with caplog.at_level(logging.WARNING):
            reply = await agent.call("go", CTX)
    finally:
        await agent.aclose()
    assert reply.get_text_content() == "ok"
    names = [t.name for t in model.requests[0].tools if t.name.startswith("mcp__")]
    assert sorted(names) == ["mcp__clash__get_x", "mcp__clash__other"]
    [result] = results_seen(model)
    assert not result.is_error and result.output == "dotted"  # the first one listed
    assert "'get_x' of server 'clash' is left out" in caplog.text


@pytest.mark.parametrize("trusted", [False, True], ids=["default", "trustAnnotations"])
async def test_read_only_hints_count_in_plan_mode_only_when_trusted(trusted: bool) -> None:
    server = ECHO if trusted else UNTRUSTED_ECHO
    model = ScriptedModel([ScriptedModel.tool_call("mcp__echo__echo", {"text": "x"}), "ok"])
    agent = HarnessAgent(
        "lead",
        model,
        store=InMemoryStore(),
        mcp_servers={"echo": server},
        permissions=PermissionEngine(mode="plan"),
    )
    try:
        await agent.call("go", CTX)
    finally:
        await agent.aclose()
    [result] = results_seen(model)
    if trusted:
        assert not result.is_error and result.output.startswith("echo: x")
    else:
        assert result.is_error and "plan mode" in result.output
