"""``type: prompt`` hooks: one model call with the event JSON in place of ``$ARGUMENTS``; the
model answers ``{"ok": ..., "reason": ...}``. ``ok: false`` blocks a Stop (the reason is the next
instruction) and ends the turn on other events (Claude Code's ``continue: false``). (``mcp_tool``
hooks: test_mcp_tool_hooks.py.)"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.errors import ConfigurationError
from agentscope_teams.hooks import Hooks, parse_hooks
from agentscope_teams.model import ScriptedModel, factory, register_model
from agentscope_teams.model.base import ModelRequest

from .helpers import CTX, agent

WRITE = ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"})
PRE = {"session_id": "s1", "tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}


def typed(event: str, kind: str, matcher: str = "", **more: Any) -> dict[str, Any]:
    return {event: [{"matcher": matcher, "hooks": [{"type": kind, **more}]}]}


def user_text(request: ModelRequest) -> str:
    return str(request.messages[-1].content)


async def test_the_prompt_gets_the_event_json_and_ok_true_allows() -> None:
    judge = ScriptedModel(['{"ok": true, "reason": ""}'])
    hooks = Hooks(parse_hooks(typed("PreToolUse", "prompt", prompt="Is this safe? $ARGUMENTS")))
    out = await hooks.fire("PreToolUse", dict(PRE), model=judge)
    assert not out.blocked and not out.stop and out.permission is None and not out.notices
    (asked,) = judge.requests
    sent = json.loads(user_text(asked).removeprefix("Is this safe? "))
    assert sent["tool_input"] == {"command": "rm -rf build"}
    assert sent["hook_event_name"] == "PreToolUse"
    assert '"ok"' in asked.system_prompt  # the model is told the answer's shape


async def test_without_arguments_the_event_json_is_appended() -> None:
    judge = ScriptedModel(['{"ok": true}'])
    hooks = Hooks(parse_hooks(typed("PreToolUse", "prompt", prompt="Judge the call.")))
    await hooks.fire("PreToolUse", dict(PRE), model=judge)
    text = user_text(judge.requests[0])
    assert text.startswith("Judge the call.") and '"rm -rf build"' in text


async def test_ok_false_on_pre_tool_use_refuses_the_call_and_ends_the_turn(tmp_path: Path) -> None:
    """End to end: the agent's own model judges (the hook names none); the write never runs."""
    model = ScriptedModel([WRITE, '```json\n{"ok": false, "reason": "no writes today"}\n```'])
    hooks = typed("PreToolUse", "prompt", "Write", prompt="May it write? $ARGUMENTS")
    async with agent(tmp_path, model, hooks=hooks) as a:
        reply = await a.call("write it", CTX)
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert "no writes today" in reply.get_text_content()  # the user is told why the turn ended
    assert len(model.requests) == 2  # the turn ended: the model was not asked again


async def test_ok_false_on_stop_makes_the_agent_go_on_with_the_reason(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            "done",
            '{"ok": false, "reason": "run the tests first"}',
            "tests ran",
            '{"ok": true, "reason": ""}',
        ]
    )
    hooks = typed("Stop", "prompt", prompt="Is the work complete? $ARGUMENTS")
    async with agent(tmp_path, model, hooks=hooks) as a:
        reply = await a.call("do it", CTX)
    assert reply.get_text_content() == "tests ran"
    assert "run the tests first" in user_text(model.requests[2])


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Models a test registers are dropped after it (the registry is the process's)."""
    monkeypatch.setattr(factory, "_SCHEMES", dict(factory._SCHEMES))


@pytest.mark.usefixtures("registry")
async def test_a_named_model_judges_instead_of_the_agents() -> None:
    judge = ScriptedModel(['{"ok": false, "reason": "not on main"}'], name="judge")
    register_model("hook-judge-test", lambda **_: judge, replace=True)
    hooks = Hooks(
        parse_hooks(typed("Stop", "prompt", prompt="ok? $ARGUMENTS", model="hook-judge-test"))
    )
    own = ScriptedModel([])
    out = await hooks.fire("Stop", {"session_id": "s1"}, model=own)
    assert out.blocked and out.reason == "not on main"
    assert own.requests == [] and len(judge.requests) == 1


@pytest.mark.parametrize("answer", ["yes, it is safe", '{"ok": "yes"}', "[true]"])
async def test_an_answer_that_is_not_the_json_is_a_named_non_blocking_error(
    answer: str, caplog: pytest.LogCaptureFixture
) -> None:
    judge = ScriptedModel([answer])
    hooks = Hooks(parse_hooks(typed("PreToolUse", "prompt", prompt="safe? $ARGUMENTS")))
    with caplog.at_level(logging.WARNING):
        out = await hooks.fire("PreToolUse", dict(PRE), model=judge)
    assert not out.blocked and not out.stop and out.permission is None
    (notice,) = out.notices
    assert "PreToolUse prompt 'safe? $ARGUMENTS'" in notice and '"ok"' in notice
    assert notice in caplog.text


async def test_a_prompt_hook_with_no_model_to_ask_is_a_non_blocking_error() -> None:
    hooks = Hooks(parse_hooks(typed("Stop", "prompt", prompt="done? $ARGUMENTS")))
    out = await hooks.fire("Stop", {"session_id": "s1"})
    assert not out.blocked
    assert any("no model" in n for n in out.notices)


async def test_a_prompt_hook_that_times_out_is_a_non_blocking_error() -> None:
    slow = ScriptedModel(['{"ok": false, "reason": "late"}'], delay=30)
    hooks = Hooks(parse_hooks(typed("Stop", "prompt", prompt="done?", timeout=0.2)))
    out = await hooks.fire("Stop", {"session_id": "s1"}, model=slow)
    assert not out.blocked
    assert any("timed out" in n for n in out.notices)


def test_a_spec_file_hook_may_not_name_an_operator_only_model(tmp_path: Path) -> None:
    """As a spec's ``model:``: a project file cannot make the hook run ``python:`` code."""
    hooks = Hooks(
        parse_hooks(
            typed("Stop", "prompt", prompt="x", model="python:os:system"),
            tmp_path / ".claude" / "settings.json",
        )
    )
    import anyio

    out = anyio.run(lambda: hooks.fire("Stop", {"session_id": "s1"}))
    assert not out.blocked
    assert any("python:os:system" in n for n in out.notices)


def test_a_prompt_hook_on_an_event_claude_code_runs_none_for_is_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        found = parse_hooks(typed("SessionStart", "prompt", prompt="x"), "a.json")
    assert found == {}
    assert "a.json: hooks.SessionStart[0].hooks[0]" in caplog.text


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"type": "comand", "command": "x"}, "unknown type 'comand'"),
        ({"type": "prompt"}, "prompt"),
        ({"type": "prompt", "prompt": "x", "model": 3}, "model"),
        ({"type": "prompt", "prompt": "x", "timeout": 0}, "timeout"),
    ],
)
def test_a_malformed_entry_names_file_entry_and_field(entry: dict, words: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        parse_hooks({"Stop": [{"hooks": [entry]}]}, "a.json")
    assert "a.json: hooks.Stop[0].hooks[0]" in str(err.value) and words in str(err.value)


async def test_a_subagent_stop_prompt_hook_asks_the_childs_model_and_sends_it_back(
    tmp_path: Path,
) -> None:
    """A spec's ``Stop`` prompt hook (its SubagentStop) is judged by the child's model; ``ok:
    false`` gives the child another turn with the reason."""
    from agentscope_teams.store import InMemoryStore

    from ..subagents.helpers import ALICE, runs, spawn
    from .pairing import parent

    child = ScriptedModel(
        ["draft", '{"ok": false, "reason": "add the summary"}', "draft + summary", '{"ok": true}']
    )
    hooks = typed("SubagentStop", "prompt", prompt="Is it complete? $ARGUMENTS")
    store = InMemoryStore()
    lead = parent(tmp_path, store, [spawn("rev", "work"), "done"], child, hooks=hooks)
    async with lead:
        await lead.call("go", ALICE)
    [rec] = await runs(store, ALICE)
    assert rec.result == "draft + summary"
    assert "add the summary" in user_text(child.requests[2])


def test_strict_check_flags_an_mcp_tool_hook_of_a_server_not_configured(tmp_path: Path) -> None:
    from agentscope_teams.subagents import SubagentSpec
    from agentscope_teams.subagents.strict import spec_problems

    path = tmp_path / "v.md"
    path.write_text(
        "---\ndescription: V.\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n"
        "        - type: mcp_tool\n          server: s\n          tool: t\n"
        "        - type: mcp_tool\n          server: git\n          tool: status\n---\nBody.\n"
    )
    spec = SubagentSpec.from_file(path)
    [problem] = spec_problems(spec, ["git"])
    assert problem.line == 3
    assert "PreToolUse[0].hooks[0]" in problem.reason and "MCP server 's'" in problem.reason
    assert spec_problems(spec, ["git", "s"]) == []


@pytest.mark.usefixtures("registry")
async def test_a_task_completed_prompt_gate_saying_no_keeps_the_task_open() -> None:
    """A quality gate judged by a model: ``ok: false`` (Claude Code's ``continue: false``) must
    not let the completion through; the member's call fails with the reason."""
    from agentscope_teams.context import RuntimeContext
    from agentscope_teams.errors import TeamError
    from agentscope_teams.store import InMemoryStore
    from agentscope_teams.teams.client import LocalTeamClient
    from agentscope_teams.teams.rules.models import Member, TaskStatus

    judge = ScriptedModel(['{"ok": false, "reason": "no tests were added"}', '{"ok": true}'])
    register_model("task-gate-test", lambda **_: judge, replace=True)
    gate = typed("TaskCompleted", "prompt", prompt="Done? $ARGUMENTS", model="task-gate-test")
    ctx = RuntimeContext(session_id="s1", user_id="alice")
    client = LocalTeamClient(InMemoryStore(), ctx, hooks=Hooks(parse_hooks(gate)))
    team = await client.create_team("t", members=[Member(name="ann")])
    task = await client.assign_task(team.id, "ship", assignee="ann")
    await client.claim_task(team.id, "ann", task.id)
    with pytest.raises(TeamError, match="no tests were added"):
        await client.complete_task(team.id, "ann", task.id, "shipped")
    assert (await client.get_task(team.id, task.id)).status is TaskStatus.IN_PROGRESS
    finished = await client.complete_task(team.id, "ann", task.id, "shipped")  # now ok: true
    assert finished.status is TaskStatus.COMPLETED


@pytest.mark.usefixtures("registry")
async def test_a_named_model_is_built_once_for_every_fire() -> None:
    """A PreToolUse hook fires on every tool call: the model it names is built at its first use
    only (each build would open a new provider client), also by a copy of the hooks."""
    built: list[ScriptedModel] = []

    def build(**_: object) -> ScriptedModel:
        built.append(ScriptedModel(['{"ok": true}'] * 3))
        return built[-1]

    register_model("hook-judge-once", build, replace=True)
    hooks = Hooks(parse_hooks(typed("Stop", "prompt", prompt="ok?", model="hook-judge-once")))
    for fired in (hooks, hooks, hooks.with_hooks({})):
        assert not (await fired.fire("Stop", {"session_id": "s1"})).blocked
    assert len(built) == 1 and len(built[0].requests) == 3


@pytest.mark.usefixtures("registry")
async def test_ok_false_on_task_created_refuses_the_task_and_stops_nobody() -> None:
    """As exit 2 on TaskCreated: the task is not created, the reason is the caller's error; the
    assignee is not stopped (Claude Code would read ``ok: false`` as ``continue: false``)."""
    from agentscope_teams.context import RuntimeContext
    from agentscope_teams.errors import TaskBlockedError
    from agentscope_teams.store import InMemoryStore
    from agentscope_teams.teams.client import LocalTeamClient
    from agentscope_teams.teams.rules.models import Member

    judge = ScriptedModel(['{"ok": false, "reason": "say when it is done"}', '{"ok": true}'])
    register_model("task-created-gate-test", lambda **_: judge, replace=True)
    gate = typed(
        "TaskCreated", "prompt", prompt="Clear? $ARGUMENTS", model="task-created-gate-test"
    )
    ctx = RuntimeContext(session_id="s1", user_id="alice")
    client = LocalTeamClient(InMemoryStore(), ctx, hooks=Hooks(parse_hooks(gate)))
    team = await client.create_team("t", members=[Member(name="ann")])
    with pytest.raises(TaskBlockedError, match="say when it is done"):
        await client.assign_task(team.id, "ship", assignee="ann")
    assert await client.list_tasks(team.id) == []
    ann = (await client.get_team(team.id)).member("ann")
    assert ann is not None and ann.stop is None
    task = await client.assign_task(team.id, "ship", "done when shipped", assignee="ann")
    assert [t.id for t in await client.list_tasks(team.id)] == [task.id]
