"""Claude Code frontmatter keys are acted on: disallowedTools, maxTurns, permissionMode (plan,
acceptEdits, dontAsk), background, effort and initialPrompt, in spec files as users write them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel, SubagentSpec
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.store import InMemoryStore
from agentscope_teams.tools import tool

pytestmark = pytest.mark.anyio

CTX = RuntimeContext(session_id="s", user_id="u")


def _spec(tmp_path: Path, name: str, front: str) -> SubagentSpec:
    path = tmp_path / f"{name}.md"
    path.write_text(f"---\nname: {name}\ndescription: Test agent.\n{front}---\nDo the task.\n")
    return SubagentSpec.from_file(path)


def _lead(tmp_path: Path, spec: SubagentSpec, script: Any, **kwargs: Any) -> HarnessAgent:
    return HarnessAgent(
        "lead",
        ScriptedModel(script),
        "Lead.",
        specs=[spec],
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
        workspace_scope="shared",
        **kwargs,
    )


def _spawn(name: str, **extra: Any) -> Any:
    return ScriptedModel.tool_call("agent_spawn", {"agent": name, "task": "work", **extra})


def _requests(lead: HarnessAgent) -> list[ModelRequest]:
    return lead.model.requests  # type: ignore[attr-defined, no-any-return]


def _last_result(request: ModelRequest) -> str:
    return str(request.messages[-1].content)


async def test_disallowed_tools_are_not_offered_and_rules_deny_matching_calls(
    tmp_path: Path,
) -> None:
    spec = _spec(tmp_path, "reader", "disallowedTools: Write, Edit, read_file(secret/**)\n")
    (tmp_path / "ws" / "secret").mkdir(parents=True)
    (tmp_path / "ws" / "secret" / "key.txt").write_text("hunter2")
    script = [
        _spawn("reader"),
        ScriptedModel.tool_call("read_file", {"path": "secret/key.txt"}),
        "could not read it",
        "done",
    ]
    lead = _lead(tmp_path, spec, script)
    async with lead:
        await lead.call("go", CTX)
    child = _requests(lead)[1]
    offered = {t.name for t in child.tools}
    assert "read_file" in offered and not offered & {"write_file", "edit_file", "multi_edit"}
    refused = _last_result(_requests(lead)[2])
    assert "denied by rule deny" in refused and "hunter2" not in refused


async def test_max_turns_stops_a_looping_child_and_its_result_says_so(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "looper", "maxTurns: 3\n")

    def script(request: ModelRequest) -> Any:
        if request.system_prompt.startswith("Lead."):
            done = any("turn limit" in str(m.content) for m in request.messages)
            return "lead done" if done else _spawn("looper")
        if not request.tools:  # the final turn, forced by the limit: no tools offered
            return "partial answer"
        return ScriptedModel.tool_call("list_files", {})

    lead = _lead(tmp_path, spec, script)
    async with lead:
        reply = await lead.call("go", CTX)
    child_calls = [r for r in _requests(lead) if r.system_prompt.startswith("Do the task.")]
    assert len(child_calls) == 4  # three turns with tools, then one final answer without
    result = _last_result(_requests(lead)[-1])
    assert "stopped at its turn limit (3 turns" in result and "partial answer" in result
    assert reply.get_text_content() == "lead done"


async def test_plan_mode_from_the_spec_refuses_a_write(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "planner", "permissionMode: plan\n")
    script = [
        _spawn("planner"),
        ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"}),
        "planned only",
        "done",
    ]
    lead = _lead(tmp_path, spec, script, permissions=None)
    async with lead:
        await lead.call("go", CTX)
    assert "plan mode" in _last_result(_requests(lead)[2])
    assert not (tmp_path / "ws" / "a.txt").exists()


@tool(requires_confirmation=True)
async def deploy(target: str) -> str:
    """Deploy (asks the user in default mode).

    Args:
        target: Where to.
    """
    return f"deployed to {target}"


@pytest.mark.parametrize(
    ("mode", "written", "deployed"),
    [
        ("acceptEdits", True, "cannot ask the user"),  # edits run; deploy would ask: no user
        ("dontAsk", True, "dontAsk mode"),  # never asks: denied
        ("default", True, "cannot ask the user"),
    ],
)
async def test_accept_edits_and_dont_ask(
    tmp_path: Path, mode: str, written: bool, deployed: str
) -> None:
    spec = _spec(tmp_path, "worker", f"permissionMode: {mode}\nworkspace: shared\n")
    script = [
        _spawn("worker"),
        ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"}),
        ScriptedModel.tool_call("deploy", {"target": "prod"}),
        "finished",
        "done",
    ]
    lead = HarnessAgent(
        "lead",
        ScriptedModel(script),
        "Lead.",
        specs=[spec],
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
        workspace_scope="shared",
        tools=[deploy],
    )
    async with lead:
        await lead.call("go", CTX)
    requests = _requests(lead)
    assert (tmp_path / "ws" / "a.txt").exists() is written
    outcome = _last_result(requests[-1]) if mode != "dontAsk" else _last_result(requests[3])
    assert deployed in outcome
    assert "deployed to prod" not in " ".join(_last_result(r) for r in requests)


async def test_background_effort_and_initial_prompt(tmp_path: Path) -> None:
    spec = _spec(
        tmp_path,
        "bg",
        "background: true\neffort: high\ninitialPrompt: Read CONTRIBUTING.md first.\n",
    )
    script = [_spawn("bg", timeout_seconds=60), "child answer", "done"]
    lead = _lead(tmp_path, spec, script)
    async with lead:
        await lead.call("go", CTX)
        await lead.call("anything new?", CTX)
    requests = _requests(lead)
    child = next(r for r in requests if r.system_prompt.startswith("Do the task."))
    assert child.effort == "high"
    assert str(child.messages[0].content).startswith("Read CONTRIBUTING.md first.\n\nwork")
    started = [r for r in requests if r.system_prompt.startswith("Lead.")][1]
    assert "in the background" in _last_result(started)


async def test_a_tool_written_with_a_rule_runs_only_the_calls_it_allows(tmp_path: Path) -> None:
    from agentscope_teams.sandbox import UnsafeHostSandbox

    spec = _spec(tmp_path, "differ", "tools: Read, Bash(echo diff:*)\nworkspace: shared\n")
    script = [
        _spawn("differ"),
        ScriptedModel.tool_call("Bash", {"command": "echo diff ok"}),
        ScriptedModel.tool_call("Bash", {"command": "echo diff ok; touch pwned"}),
        ScriptedModel.tool_call("Bash", {"command": "touch pwned"}),
        "diffed",
        "done",
    ]
    # the unsafe host backend: this test is about the rule, not the sandbox (tests/sandbox is)
    # a trusted project: its rule allows (tests/subagents/test_untrusted_grants.py: untrusted)
    lead = _lead(tmp_path, spec, script, sandbox=UnsafeHostSandbox(), trust_project=True)
    async with lead:
        await lead.call("go", CTX)
    requests = _requests(lead)
    assert "diff ok" in _last_result(requests[2])  # allowed, and run without asking
    for compound_or_other in (requests[3], requests[4]):
        refused = _last_result(compound_or_other)
        assert "only for calls matching Bash(echo diff:*)" in refused
    assert not (tmp_path / "ws" / "pwned").exists()


async def test_disallowed_skill_removes_the_skill_tool(tmp_path: Path) -> None:
    skills = tmp_path / "skills" / "pdf"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: pdf\ndescription: PDFs.\n---\nUse pdftotext.\n")
    spec = _spec(tmp_path, "plain", "disallowedTools: Skill\n")
    lead = _lead(
        tmp_path, spec, [_spawn("plain"), "child done", "done"], skills=tmp_path / "skills"
    )
    async with lead:
        await lead.call("go", CTX)
    assert "skill" in {t.name for t in _requests(lead)[0].tools}
    assert "skill" not in {t.name for t in _requests(lead)[1].tools}
