"""``type: mcp_tool`` hooks: a tool of one of the agent's MCP servers is called with the hook's
``input`` (``${path}`` filled from the event JSON) and its text is read as a command hook's stdout.
Against a real stdio MCP server (``guard_server.py``) that the agent starts, as it starts those of
``.mcp.json``. A guard that cannot answer (server not connected, tool missing, error result,
timeout) denies on PreToolUse; elsewhere it is a non-blocking error naming server and tool."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.errors import ConfigurationError
from agentscope_teams.hooks import Hooks, parse_hooks
from agentscope_teams.hooks.mcp_tool import McpAnswer, joined, substitute
from agentscope_teams.model import ScriptedModel

from .helpers import CTX, agent, read_lines, tool_results

pytest.importorskip("mcp")

HERE = Path(__file__).resolve().parent


def write(path: str, content: str = "x") -> Any:
    return ScriptedModel.tool_call("write_file", {"path": path, "content": content})


def mcp_hook(event: str, tool: str, matcher: str = "", **entry: Any) -> dict[str, Any]:
    hook = {"type": "mcp_tool", "server": entry.pop("server", "guard"), "tool": tool, **entry}
    return {event: [{"matcher": matcher, "hooks": [hook]}]}


@pytest.fixture
def calls(tmp_path: Path) -> Path:
    return tmp_path / "guard-calls.jsonl"


@pytest.fixture
def servers(calls: Path) -> dict[str, Any]:
    """The agent's MCP servers: the guard server, which logs each call to ``calls``."""
    args = [str(HERE / "guard_server.py")]
    return {"guard": {"command": sys.executable, "args": args, "env": {"GUARD_LOG": str(calls)}}}


GUARD_INPUT = {
    "path": "${tool_input.file_path}",
    "event": "${hook_event_name}",
    "missing": "${tool_input.no_such_field}",
    "whole": "${tool_input}",
}


async def test_a_pre_tool_use_guard_denies_a_protected_write_and_allows_another(
    tmp_path: Path, servers: dict[str, Any], calls: Path
) -> None:
    """End to end: the guard server's JSON decision (hookSpecificOutput) refuses the write under
    ``protected/``; the other write runs; the tool got the substituted input."""
    model = ScriptedModel([write("protected/a.txt"), write("notes/b.txt"), "done"])
    hooks = mcp_hook("PreToolUse", "check_path", "Write", input=GUARD_INPUT)
    async with agent(tmp_path, model, hooks=hooks, mcp_servers=servers) as a:
        reply = await a.call("write both", CTX)
    assert reply.get_text_content() == "done"
    ws = tmp_path / "ws"
    assert not (ws / "protected" / "a.txt").exists()
    assert (ws / "notes" / "b.txt").read_text() == "x"
    denied = tool_results(model.requests[1])[-1]
    assert "is protected by the guard server" in denied
    first, second = read_lines(calls)
    assert first["path"] == str(ws / "protected" / "a.txt")  # absolute, as Claude Code sends it
    assert second["path"] == str(ws / "notes" / "b.txt")
    assert first["event"] == "PreToolUse"
    assert first["missing"] == ""  # a path that leads nowhere: the empty string
    assert json.loads(first["whole"]) == {"file_path": first["path"], "content": "x"}


async def test_a_post_tool_use_hook_adds_context_the_model_reads(
    tmp_path: Path, servers: dict[str, Any], calls: Path
) -> None:
    model = ScriptedModel([write("a.txt"), "done"])
    hooks = mcp_hook("PostToolUse", "note", "Write", input={"path": "${tool_input.file_path}"})
    async with agent(tmp_path, model, hooks=hooks, mcp_servers=servers) as a:
        await a.call("write it", CTX)
    [result] = tool_results(model.requests[1])
    assert f"guard saw {tmp_path / 'ws' / 'a.txt'} written" in result
    assert (tmp_path / "ws" / "a.txt").exists()


async def test_a_guard_on_a_server_the_agent_lacks_denies_with_a_clear_reason(
    tmp_path: Path,
) -> None:
    model = ScriptedModel([write("a.txt"), "ok"])
    hooks = mcp_hook("PreToolUse", "check_path", "Write", server="policy", input=GUARD_INPUT)
    async with agent(tmp_path, model, hooks=hooks) as a:
        await a.call("write it", CTX)
    assert not (tmp_path / "ws" / "a.txt").exists()
    [result] = tool_results(model.requests[1])
    assert "MCP server 'policy' is not connected" in result
    assert "mcp_tool 'check_path' of server 'policy'" in result and "denied" in result


async def test_a_guard_whose_tool_fails_denies_and_names_server_tool_and_error(
    tmp_path: Path, servers: dict[str, Any]
) -> None:
    model = ScriptedModel([write("a.txt"), "ok"])
    hooks = mcp_hook("PreToolUse", "broken", "Write", input={"path": "${tool_input.file_path}"})
    async with agent(tmp_path, model, hooks=hooks, mcp_servers=servers) as a:
        await a.call("write it", CTX)
    assert not (tmp_path / "ws" / "a.txt").exists()
    [result] = tool_results(model.requests[1])
    assert "mcp_tool 'broken' of server 'guard'" in result
    assert "policy store unreachable" in result


async def test_a_post_tool_use_hook_whose_tool_fails_is_a_non_blocking_error(
    tmp_path: Path, servers: dict[str, Any]
) -> None:
    """The error result is not read as a decision: the write stands, the user is told."""
    model = ScriptedModel([write("a.txt"), "ok"])
    hooks = mcp_hook("PostToolUse", "broken", "Write", input={"path": "${tool_input.file_path}"})
    async with agent(tmp_path, model, hooks=hooks, mcp_servers=servers) as a:
        events = [e async for e in a.stream("write it", CTX)]
    assert (tmp_path / "ws" / "a.txt").exists()
    hints = [e.text for e in events if getattr(e, "type", "") == "hint"]
    assert any("'broken' of server 'guard'" in h and "error result" in h for h in hints), hints
    [result] = tool_results(model.requests[1])
    assert "unreachable" not in result  # shown to the user, not to the model


async def test_a_tool_the_server_does_not_have_is_named_with_the_tools_it_has(
    tmp_path: Path, servers: dict[str, Any], calls: Path
) -> None:
    model = ScriptedModel([write("a.txt"), "ok"])
    hooks = mcp_hook("PreToolUse", "chek_path", "Write", input=GUARD_INPUT)
    async with agent(tmp_path, model, hooks=hooks, mcp_servers=servers) as a:
        await a.call("write it", CTX)
    [result] = tool_results(model.requests[1])
    assert "has no tool 'chek_path'" in result and "check_path" in result
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert read_lines(calls) == []  # nothing was called


async def test_a_hook_timeout_cuts_a_slow_tool(
    tmp_path: Path, servers: dict[str, Any], calls: Path
) -> None:
    model = ScriptedModel([write("a.txt"), "ok"])
    hooks = mcp_hook("PreToolUse", "slow", "Write", input={"seconds": 30}, timeout=1)
    async with agent(tmp_path, model, hooks=hooks, mcp_servers=servers) as a:
        await a.call("write it", CTX)
    [result] = tool_results(model.requests[1])
    assert "timed out after 1s" in result and "'slow' of server 'guard'" in result
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert read_lines(calls) == [{"tool": "slow", "seconds": 30}]  # a number stays a number


async def test_a_subagent_stop_hook_calls_the_childs_server_and_sends_it_back(
    tmp_path: Path, servers: dict[str, Any], calls: Path
) -> None:
    """SubagentStop fires outside the child's reply: its mcp_tool hook still reaches the child's
    servers (here inherited from the lead); a block gives the child another turn."""
    from agentscope_teams.store import InMemoryStore

    from ..subagents.helpers import ALICE, runs, spawn
    from .pairing import parent

    child = ScriptedModel(["draft", "draft + summary"])
    gate = {"message": "${last_assistant_message}"}
    hooks = mcp_hook("SubagentStop", "finish_gate", input=gate)
    store = InMemoryStore()
    lead = parent(tmp_path, store, [spawn("rev", "work"), "done"], child, hooks=hooks,
                  mcp_servers=servers)  # fmt: skip
    async with lead:
        await lead.call("go", ALICE)
    [rec] = await runs(store, ALICE)
    assert rec.result == "draft + summary"
    assert [c["message"] for c in read_lines(calls)] == ["draft", "draft + summary"]


async def test_a_session_end_hook_of_a_deleted_session_reaches_the_agents_server(
    tmp_path: Path, servers: dict[str, Any], calls: Path
) -> None:
    """SessionEnd fires from delete_session, outside any reply: the agent's servers still serve
    it."""
    hooks = mcp_hook("SessionEnd", "note", input={"path": "${session_id}:${reason}"})
    async with agent(tmp_path, ScriptedModel(["hi"]), hooks=hooks, mcp_servers=servers) as a:
        await a.call("hello", CTX)
        assert await a.delete_session(CTX)
    assert read_lines(calls) == [{"tool": "note", "path": "s1:delete"}]


async def test_without_an_agent_no_server_is_connected() -> None:
    """A team client's TaskCreated has no agent, so no MCP server: a non-blocking error."""
    hooks = Hooks(parse_hooks(mcp_hook("TaskCreated", "note", input={"path": "${task_id}"})))
    out = await hooks.fire("TaskCreated", {"task_id": "t1", "task_subject": "x"})
    assert not out.blocked and out.permission is None
    assert any("MCP server 'guard' is not connected" in n for n in out.notices)


def test_an_mcp_tool_hook_of_an_agentless_event_warns_at_load(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        found = parse_hooks(mcp_hook("TaskCompleted", "note"), "proj/.claude/settings.json")
    assert [h.kind for h in found["TaskCompleted"]] == ["mcp_tool"]
    assert "proj/.claude/settings.json: hooks.TaskCompleted[0].hooks[0]" in caplog.text
    assert "no MCP server is connected" in caplog.text


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"type": "mcp_tool", "tool": "t"}, "needs server"),
        ({"type": "mcp_tool", "server": "s"}, "needs tool"),
        ({"type": "mcp_tool", "server": "s", "tool": "t", "input": ["a"]}, "input must be"),
        ({"type": "mcp_tool", "server": "s", "tool": "t", "timeout": -1}, "timeout"),
    ],
)
def test_a_malformed_mcp_tool_entry_names_file_entry_and_field(entry: dict, words: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        parse_hooks({"PreToolUse": [{"hooks": [entry]}]}, "a.json")
    assert "a.json: hooks.PreToolUse[0].hooks[0]" in str(err.value) and words in str(err.value)


def test_substitution_fills_strings_at_any_depth_and_leaves_other_values() -> None:
    event = {
        "tool_input": {"file_path": "/w/a.py", "edits": [{"old": "x"}], "n": 3, "ok": True},
        "cwd": "/w",
        "gone": None,
    }
    given = {
        "path": "file ${tool_input.file_path} in ${cwd}",
        "first": "${tool_input.edits.0.old}",
        "n": "${tool_input.n}",
        "flag": "${tool_input.ok}",
        "nested": {"list": ["${cwd}", 7, None]},
        "absent": "[${nope.deeper}][${gone}][${tool_input.edits.5}]",
        "count": 2,
    }
    assert substitute(given, event) == {
        "path": "file /w/a.py in /w",
        "first": "x",
        "n": "3",
        "flag": "true",
        "nested": {"list": ["/w", 7, None]},
        "absent": "[][][]",
        "count": 2,
    }


class _Servers:
    """MCP servers in memory (of the hooks layer's protocol): each tool echoes its server."""

    def __init__(self, *names: str) -> None:
        self._names = list(names)

    def names(self) -> list[str]:
        return self._names

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> McpAnswer:
        context = {"hookEventName": "PostToolUse", "additionalContext": f"{server}/{tool}"}
        return McpAnswer(json.dumps({"hookSpecificOutput": context}))


async def test_the_servers_of_several_extensions_are_reached_by_name() -> None:
    both = joined([_Servers("a"), _Servers("b", "a")])
    assert both is not None and list(both.names()) == ["a", "b"]
    hooks = Hooks(
        parse_hooks({"PostToolUse": [{"hooks": [
            {"type": "mcp_tool", "server": "b", "tool": "t"},
            {"type": "mcp_tool", "server": "a", "tool": "u"},
        ]}]})
    )  # fmt: skip
    out = await hooks.fire("PostToolUse", {"tool_name": "Write"}, servers=both)
    assert sorted(out.context) == ["a/u", "b/t"] and not out.errors
    assert joined([]) is None


async def test_a_teammate_idle_hook_reaches_the_members_server(
    tmp_path: Path, servers: dict[str, Any], calls: Path
) -> None:
    """TeammateIdle fires in the member's loop, between replies: the member's servers serve it."""
    from agentscope_teams.mcp import McpToolset
    from agentscope_teams.teams import MemberBuilder

    from .test_teammate_idle import Team

    team = Team(tmp_path, "exit 0\n")
    config = mcp_hook("TeammateIdle", "note", input={"path": "${teammate_name}@${team_name}"})
    toolset = McpToolset.from_config(servers)
    old = team.builder
    team.builder = MemberBuilder(
        store=team.store,
        specs=old.specs,
        client_factory=old.client_factory,
        workspace=team.ws,
        root=tmp_path,
        model=team.model,
        toolkit=old.toolkit,
        hooks=Hooks(parse_hooks(config), project_dir=tmp_path),
        mcp=toolset,
    )
    team.log = calls  # the run waits until the hook has fired
    try:
        tid = await team.run()
    finally:
        await team.runtime.aclose()
        await toolset.aclose()
    assert read_lines(calls) == [{"tool": "note", "path": f"c@{tid}"}]
