"""Permission rules and HITL confirmation apply to MCP tools like to any tool."""

from __future__ import annotations

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.events import (
    ConfirmResult,
    RequireUserConfirmEvent,
    UserConfirmResultEvent,
)
from agentscope_teams.state import PermissionRule
from agentscope_teams.store import InMemoryStore
from agentscope_teams.tools import PermissionEngine

from .helpers import ECHO, results_seen

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")


def lead(model: ScriptedModel, rules: list[PermissionRule]) -> HarnessAgent:
    return HarnessAgent(
        "lead",
        model,
        store=InMemoryStore(),
        mcp_servers={"mcpServers": {"echo": ECHO}},
        permissions=PermissionEngine(rules),
    )


async def test_a_deny_rule_on_the_server_name_refuses_its_tools_without_starting_it() -> None:
    model = ScriptedModel([ScriptedModel.tool_call("mcp__echo__echo", {"text": "x"}), "ok"])
    agent = lead(model, [PermissionRule(tool="mcp__echo", behavior="deny")])
    try:
        await agent.call("go", CTX)
    finally:
        await agent.aclose()
    [result] = results_seen(model)
    assert result.is_error and "denied by rule deny mcp__echo" in result.output
    assert agent.mcp.pool.starts == 1  # only the listing; the call itself never ran


async def test_an_unannotated_tool_asks_and_runs_once_confirmed() -> None:
    call = ScriptedModel.tool_call("mcp__echo__delete_everything", {"path": "/tmp/x"})
    model = ScriptedModel([call, "deleted, as you confirmed"])
    agent = lead(model, [])
    try:
        events = [e async for e in agent.stream("clean up", CTX)]
        [ask] = [e for e in events if isinstance(e, RequireUserConfirmEvent)]
        assert [c.name for c in ask.tool_calls] == ["mcp__echo__delete_everything"]
        assert len(model.requests) == 1  # paused: the tool has not run
        answer = UserConfirmResultEvent(
            reply_id=ask.reply_id,
            results=[ConfirmResult(tool_call_id=c.id, confirmed=True) for c in ask.tool_calls],
        )
        final = await agent.call(answer, CTX)
    finally:
        await agent.aclose()
    assert final.get_text_content() == "deleted, as you confirmed"
    [result] = results_seen(model)
    assert not result.is_error and result.output == "deleted /tmp/x"


async def test_an_ask_rule_pauses_a_read_only_mcp_tool() -> None:
    model = ScriptedModel([ScriptedModel.tool_call("mcp__echo__echo", {"text": "x"}), "ok"])
    agent = lead(model, [PermissionRule(tool="mcp__echo__echo", behavior="ask")])
    try:
        events = [e async for e in agent.stream("go", CTX)]
    finally:
        await agent.aclose()
    asks = [e for e in events if isinstance(e, RequireUserConfirmEvent)]
    assert len(asks) == 1 and asks[0].tool_calls[0].name == "mcp__echo__echo"
