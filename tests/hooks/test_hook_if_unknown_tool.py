"""An ``if`` whose tool name is no tool (a typo: ``Bsh(git *)``) would never match, so the hook
would never run, silently. Here it is a warning at load naming the file, the entry, the field and
the closest known names, a ``specs check --strict`` problem, and on a guard event
(``PreToolUse`` / ``PermissionRequest``) the hook fails closed: every call its matcher selects
is denied with a reason naming the ``if``. Real command hooks from a real settings file, a real
agent call driven by ScriptedModel."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.hooks import parse_hooks
from agentscope_teams.model import ScriptedModel
from agentscope_teams.tools import PermissionEngine, tool

from .helpers import CTX, agent, read_lines, script, tool_results

GUARD = (
    "import json, os, sys\n"
    "d = json.load(sys.stdin)\n"
    "with open(os.environ['LOG'], 'a') as f:\n"
    "    f.write(json.dumps(d['tool_input']) + '\\n')\n"
    "print('guard says no', file=sys.stderr)\n"
    "sys.exit(2)\n"
)
WHERE = "hooks.PreToolUse[0].hooks[0].if"


def _project(tmp_path: Path, event: str, matcher: str, condition: str) -> Path:
    """A project whose settings.json has the guard on ``event`` with ``if: condition``; its
    agents folder."""
    root = tmp_path / "proj"
    (root / ".claude" / "agents").mkdir(parents=True)
    entry = {"type": "command", "command": script(tmp_path, "g.py", GUARD, python=True)}
    entry["if"] = condition
    settings = {"hooks": {event: [{"matcher": matcher, "hooks": [entry]}]}}
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))
    return root / ".claude" / "agents"


def _bash(command: str) -> Any:
    return ScriptedModel.tool_call("bash", {"command": command})


async def _run(tmp_path: Path, specs: Path, *calls: Any, **kw: Any) -> ScriptedModel:
    model = ScriptedModel([*calls, "done"])
    engine = PermissionEngine(mode="bypass")
    lead = agent(
        tmp_path, model, specs=specs, trust_project=True, teams=False, permissions=engine,
        sandbox="unsafe-host", **kw,
    )  # fmt: skip
    async with lead as a:
        await a.call("go", CTX)
    return model


@pytest.mark.parametrize(("condition", "closest"), [("Bsh(git *)", "Bash"), ("Wrte", "Write")])
def test_an_if_naming_no_tool_is_a_warning_with_the_closest_names(
    caplog: pytest.LogCaptureFixture, condition: str, closest: str
) -> None:
    data = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"command": "true", "if": condition}]}]}
    with caplog.at_level(logging.WARNING, logger="agentscope_teams.hooks"):
        parse_hooks(data, "/p/.claude/settings.json")
    assert f"/p/.claude/settings.json: {WHERE}" in caplog.text
    assert repr(condition.split("(")[0]) in caplog.text
    assert closest in caplog.text.split("closest")[1]


@pytest.mark.parametrize(
    "condition",
    ["Bash(git *)", "bash(git *)", "Bash (git *)", "Edit(src/**)", "mcp__github__create_issue",
     "mcp__github", "mcp__github__*", "PowerShell"],
)  # fmt: skip
def test_control_a_known_name_is_no_warning(
    caplog: pytest.LogCaptureFixture, condition: str
) -> None:
    data = {"PreToolUse": [{"matcher": "", "hooks": [{"command": "true", "if": condition}]}]}
    with caplog.at_level(logging.WARNING, logger="agentscope_teams.hooks"):
        parse_hooks(data, "/p/.claude/settings.json")
    assert ".if" not in caplog.text


async def test_a_guard_whose_if_names_no_tool_denies_every_call_it_selects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: the guard never ran and both commands ran. Now both calls are denied, the model
    reads why, and the guard itself was never started (it cannot say which calls it meant)."""
    monkeypatch.setenv("LOG", str(tmp_path / "starts.jsonl"))
    specs = _project(tmp_path, "PreToolUse", "Bash", "Bsh(git push *)")
    ws = tmp_path / "ws"
    with caplog.at_level(logging.WARNING, logger="agentscope_teams.hooks"):
        model = await _run(
            tmp_path, specs, _bash("git push origin main > pushed"), _bash("echo hi > said")
        )
    assert f"settings.json: {WHERE}" in caplog.text
    first, second = tool_results(model.requests[2])
    for result in (first, second):
        assert result.startswith("denied: ") and "Bsh(git push *)" in result
        assert "Bash" in result.split("closest")[1] and "settings.json" in result
    assert not (ws / "pushed").exists() and not (ws / "said").exists()
    assert read_lines(tmp_path / "starts.jsonl") == []


async def test_control_a_guard_with_a_known_if_lets_other_commands_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOG", str(tmp_path / "starts.jsonl"))
    specs = _project(tmp_path, "PreToolUse", "Bash", "Bash(git push *)")
    model = await _run(tmp_path, specs, _bash("echo hi > said"))
    assert (tmp_path / "ws" / "said").exists()
    assert not tool_results(model.requests[1])[0].startswith("denied")


@tool
async def deploy(target: str) -> str:
    """Deploy to a target.

    Args:
        target: Where to deploy.
    """
    return f"deployed to {target}"


async def test_an_if_naming_a_tool_of_the_agents_own_is_matched_normally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``deploy`` is no Claude Code name nor a built-in one (a warning at load), but the agent
    has it: the guard runs for ``deploy(prod)`` only, and other calls are not denied."""
    monkeypatch.setenv("LOG", str(tmp_path / "starts.jsonl"))
    specs = _project(tmp_path, "PreToolUse", "", "deploy(prod)")
    prod = ScriptedModel.tool_call("deploy", {"target": "prod"})
    staging = ScriptedModel.tool_call("deploy", {"target": "staging"})
    model = await _run(tmp_path, specs, prod, staging, _bash("echo hi > said"), tools=[deploy])
    assert read_lines(tmp_path / "starts.jsonl") == [{"target": "prod"}]
    assert tool_results(model.requests[2]) == ["guard says no", "deployed to staging"]
    assert (tmp_path / "ws" / "said").exists()


async def test_on_a_tool_event_that_is_no_guard_the_hook_just_never_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostToolUse decides nothing: a warning at load, the call is not refused."""
    monkeypatch.setenv("LOG", str(tmp_path / "starts.jsonl"))
    specs = _project(tmp_path, "PostToolUse", "Bash", "Bsh(git *)")
    model = await _run(tmp_path, specs, _bash("echo hi > said"))
    assert (tmp_path / "ws" / "said").exists()
    assert read_lines(tmp_path / "starts.jsonl") == []
    assert "denied" not in tool_results(model.requests[1])[0]


def test_strict_check_flags_an_if_naming_no_tool(tmp_path: Path) -> None:
    from agentscope_teams.subagents import SubagentSpec
    from agentscope_teams.subagents.strict import spec_problems

    path = tmp_path / "v.md"
    path.write_text(
        "---\ndescription: V.\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n"
        "        - command: ./check.sh\n          if: Bsh(git *)\n---\nBody.\n"
    )
    [problem] = spec_problems(SubagentSpec.from_file(path), None)
    assert problem.reason.startswith("hooks.PreToolUse[0].hooks[0]: if 'Bsh(git *)': 'Bsh' is no")
    assert "Bash" in problem.reason.split("closest")[1]
