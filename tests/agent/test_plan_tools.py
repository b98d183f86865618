"""The session's plan: todo_write persists with the session, plan mode is left only with the user's
approval (exit_plan_mode), and ask_user_question pauses in every mode with the answers as result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.events import (
    ConfirmResult,
    RequireUserConfirmEvent,
    ToolResultEvent,
    UserConfirmResultEvent,
)
from agentscope_teams.store import JsonFileStore
from agentscope_teams.tools import PermissionEngine

pytestmark = pytest.mark.anyio

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
TODOS = [
    {"content": "Read the module", "status": "completed", "activeForm": "Reading the module"},
    {"content": "Write the test", "status": "in_progress", "activeForm": "Writing the test"},
    {"content": "Run the suite", "status": "pending", "activeForm": "Running the suite"},
]


def _agent(tmp_path: Path, script: list[Any], mode: str = "default") -> HarnessAgent:
    return HarnessAgent(
        "lead",
        ScriptedModel(script),
        "You plan.",
        store=JsonFileStore(tmp_path / "store"),
        workspace=tmp_path / "ws",
        permissions=PermissionEngine(mode=mode),  # type: ignore[arg-type]
    )


async def _events(agent: HarnessAgent, input: Any) -> list[Any]:
    return [e async for e in agent.stream(input, CTX)]


def _results(events: list[Any]) -> dict[str, Any]:
    return {e.result.name: e.result for e in events if isinstance(e, ToolResultEvent)}


async def test_the_task_list_is_saved_with_the_session_and_read_by_a_new_agent(
    tmp_path: Path,
) -> None:
    writer = _agent(tmp_path, [ScriptedModel.tool_call("TodoWrite", {"todos": TODOS}), "planned"])
    async with writer:
        events = await _events(writer, "plan it")
    written = _results(events)["TodoWrite"]
    assert not written.is_error and "(1/3 done)" in written.output
    assert "Now: Writing the test" in written.output
    assert [t["status"] for t in written.data["tasks"]] == ["completed", "in_progress", "pending"]
    reader = _agent(tmp_path, [ScriptedModel.tool_call("todo_read", {}), "read"])
    async with reader:
        state = await reader.get_agent_state(CTX)
        events = await _events(reader, "where are we")
    assert [t.title for t in state.tasks_context.tasks] == [t["content"] for t in TODOS]
    assert "[~] Write the test" in _results(events)["todo_read"].output


async def test_a_bad_item_is_a_tool_error_and_the_list_is_unchanged(tmp_path: Path) -> None:
    bad = [{"content": "x", "status": "doing"}]
    agent = _agent(tmp_path, [ScriptedModel.tool_call("todo_write", {"todos": bad}), "ok"])
    async with agent:
        events = await _events(agent, "plan")
        state = await agent.get_agent_state(CTX)
    assert _results(events)["todo_write"].is_error
    assert state.tasks_context.tasks == []


async def test_plan_mode_is_left_only_when_the_user_approves_the_plan(tmp_path: Path) -> None:
    script = [
        ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "early"}),
        ScriptedModel.tool_call("ExitPlanMode", {"plan": "1. write a.txt"}),
        ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "late"}),
        "done",
    ]
    agent = _agent(tmp_path, script, mode="plan")
    async with agent:
        events = await _events(agent, "do it")
        assert "plan mode" in _results(events)["write_file"].output  # refused while planning
        asks = [e for e in events if isinstance(e, RequireUserConfirmEvent)]
        assert [c.name for c in asks[0].tool_calls] == ["ExitPlanMode"]
        approve = UserConfirmResultEvent(
            reply_id=asks[0].reply_id,
            results=[ConfirmResult(tool_call_id=asks[0].tool_calls[0].id, confirmed=True)],
        )
        events = await _events(agent, approve)
        state = await agent.get_agent_state(CTX)
    assert not _results(events)["write_file"].is_error
    assert state.permission_context.mode == "default" and state.permission_context.mode_chosen
    assert (agent.workspace_for(CTX) / "a.txt").read_text() == "late"


async def test_enter_plan_mode_makes_the_session_read_only(tmp_path: Path) -> None:
    script = [
        ScriptedModel.tool_call("EnterPlanMode", {}),
        ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"}),
        "planning",
    ]
    agent = _agent(tmp_path, script, mode="bypass")
    async with agent:
        events = await _events(agent, "think first")
    assert _results(events)["write_file"].is_error
    assert not (agent.workspace_for(CTX) / "a.txt").exists()


async def test_a_question_pauses_even_in_bypass_mode_and_the_answers_are_the_result(
    tmp_path: Path,
) -> None:
    question = {"questions": [{"question": "Which database?", "options": [{"label": "Postgres"}]}]}
    agent = _agent(
        tmp_path,
        [ScriptedModel.tool_call("AskUserQuestion", question), "using Postgres"],
        mode="bypass",
    )
    async with agent:
        events = await _events(agent, "set it up")
        asks = [e for e in events if isinstance(e, RequireUserConfirmEvent)]
        assert len(asks) == 1
        answer = ConfirmResult(
            tool_call_id=asks[0].tool_calls[0].id,
            confirmed=True,
            answers={"Which database?": "Postgres"},
        )
        events = await _events(
            agent, UserConfirmResultEvent(reply_id=asks[0].reply_id, results=[answer])
        )
    result = _results(events)["AskUserQuestion"]
    assert not result.is_error and "Which database?: Postgres" in result.output
