"""``type: agent`` hooks: a verifier agent with read-only file tools reads the workspace, then
answers ``{"ok": ..., "reason": ...}`` as a prompt hook does. Where no agent fires the event, a
guard of that type denies instead of never running."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.hooks import Hooks, parse_hooks
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelRequest

from .helpers import CTX, agent, tool_results

WRITE = ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"})
READ_POLICY = ScriptedModel.tool_call("read_file", {"path": "POLICY.md"})


def agent_hooks(event: str, matcher: str = "", **more: Any) -> dict[str, Any]:
    entry = {"type": "agent", "prompt": "Does the policy allow this? $ARGUMENTS", **more}
    return {event: [{"matcher": matcher, "hooks": [entry]}]}


def tool_names(request: ModelRequest) -> set[str]:
    return {t.name for t in request.tools}


async def test_the_verifier_reads_the_workspace_and_its_no_refuses_the_call(
    tmp_path: Path,
) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "POLICY.md").write_text("No new files in the root.")
    model = ScriptedModel(
        [WRITE, READ_POLICY, '{"ok": false, "reason": "POLICY.md forbids new root files"}']
    )
    async with agent(tmp_path, model, hooks=agent_hooks("PreToolUse", "Write")) as a:
        reply = await a.call("write it", CTX)
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert "POLICY.md forbids new root files" in reply.get_text_content()
    verifier_first, verifier_second = model.requests[1], model.requests[2]
    assert '"tool_name": "Write"' in str(verifier_first.messages[0].content)
    assert tool_names(verifier_first) == {"read_file", "list_files", "glob_files", "grep_files"}
    (read,) = tool_results(verifier_second)
    assert "No new files in the root." in read
    assert len(model.requests) == 3  # ok: false ended the turn


async def test_a_verifier_that_says_ok_lets_the_call_run(tmp_path: Path) -> None:
    model = ScriptedModel([WRITE, '{"ok": true, "reason": ""}', "written"])
    async with agent(tmp_path, model, hooks=agent_hooks("PreToolUse", "Write")) as a:
        reply = await a.call("write it", CTX)
    assert (tmp_path / "ws" / "a.txt").read_text() == "x"
    assert reply.get_text_content() == "written"


async def test_a_verifier_cannot_write(tmp_path: Path) -> None:
    """Its toolkit has only the read-only file tools: a write is an unknown tool to it."""
    sneaky = ScriptedModel.tool_call("write_file", {"path": "b.txt", "content": "y"})
    model = ScriptedModel([WRITE, sneaky, '{"ok": true}', "done"])
    async with agent(tmp_path, model, hooks=agent_hooks("PreToolUse", "Write")) as a:
        await a.call("write it", CTX)
    assert not (tmp_path / "ws" / "b.txt").exists()
    assert (tmp_path / "ws" / "a.txt").exists()


async def test_an_agent_stop_hook_sends_the_agent_back_with_the_reason(tmp_path: Path) -> None:
    model = ScriptedModel(
        ["done", '{"ok": false, "reason": "update the changelog"}', "updated", '{"ok": true}']
    )
    async with agent(tmp_path, model, hooks=agent_hooks("Stop")) as a:
        reply = await a.call("do it", CTX)
    assert reply.get_text_content() == "updated"
    assert "update the changelog" in str(model.requests[2].messages[-1].content)


async def test_where_no_agent_fires_the_event_a_guard_denies_and_others_report() -> None:
    pre = Hooks(parse_hooks(agent_hooks("PreToolUse")))
    out = await pre.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}})
    assert out.permission == "deny" and "type agent" in out.permission_reason
    done = Hooks(parse_hooks(agent_hooks("TaskCompleted")))
    out = await done.fire("TaskCompleted", {"task_id": "t1"})
    assert not out.blocked and any("do not run" in n for n in out.notices)


def test_an_agent_hook_of_a_team_task_event_warns_at_load(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        parse_hooks(agent_hooks("TaskCompleted"), "proj/.claude/settings.json")
    assert "proj/.claude/settings.json: hooks.TaskCompleted[0].hooks[0]" in caplog.text


async def test_a_subagent_stop_agent_hook_runs_in_the_childs_workspace(tmp_path: Path) -> None:
    from agentscope_teams.store import InMemoryStore

    from ..subagents.helpers import ALICE, runs, spawn
    from .pairing import parent

    listing = ScriptedModel.tool_call("list_files", {"path": "."})
    child = ScriptedModel(
        [
            "draft",
            listing,
            '{"ok": false, "reason": "write the report file"}',
            "report",
            '{"ok": true}',
        ]
    )
    store = InMemoryStore()
    hooks = agent_hooks("SubagentStop")
    lead = parent(tmp_path, store, [spawn("rev", "work"), "done"], child, hooks=hooks)
    async with lead:
        await lead.call("go", ALICE)
    [rec] = await runs(store, ALICE)
    assert rec.result == "report"
    assert "list_files" in tool_names(child.requests[1])
    assert "write the report file" in str(child.requests[3].messages[-1].content)
