"""The ``if`` field of a hook entry (Claude Code v2.1.85+): a permission rule evaluated against
the tool call; the hook is started only when the call matches it. Real command scripts, a real
agent call; the guard logs every start, so a run that should not happen is seen."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.errors import ConfigurationError
from agentscope_teams.hooks import parse_hooks
from agentscope_teams.model import ScriptedModel
from agentscope_teams.tools import PermissionEngine

from .helpers import CTX, agent, read_lines, script, tool_results

GUARD = (
    "import json, os, sys\n"
    "d = json.load(sys.stdin)\n"
    "with open(os.environ['LOG'], 'a') as f:\n"
    "    f.write(json.dumps(d['tool_input']) + '\\n')\n"
    "print('guard says no', file=sys.stderr)\n"
    "sys.exit(2)\n"
)


def _guard(tmp_path: Path, condition: str | None, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("LOG", str(tmp_path / "starts.jsonl"))
    entry: dict[str, Any] = {
        "type": "command",
        "command": script(tmp_path, "g.py", GUARD, python=True),
    }
    if condition is not None:
        entry["if"] = condition
    return {"PreToolUse": [{"matcher": "Bash|Write", "hooks": [entry]}]}


def _bash(command: str) -> Any:
    return ScriptedModel.tool_call("bash", {"command": command})


async def _run(tmp_path: Path, hooks: dict, *calls: Any) -> ScriptedModel:
    model = ScriptedModel([*calls, "done"])
    engine = PermissionEngine(mode="bypass")
    async with agent(tmp_path, model, hooks=hooks, permissions=engine, sandbox="unsafe-host") as a:
        await a.call("go", CTX)
    return model


@pytest.mark.parametrize(
    ("command", "blocked"),
    [
        ("git push origin main", True),
        ("ls && git push origin main", True),  # the second subcommand matches
        ("FOO=bar git push", True),  # an environment prefix is seen through
        ("timeout 5 git push", True),  # so is a wrapper
        ("git $OP origin", True),  # unsure (a word known only when it runs): the guard runs
        ("echo 'unterminated", True),  # cannot be parsed: the guard runs
        ("echo hello", False),
        ("echo git push", False),  # git push is only an argument here
    ],
)
async def test_a_bash_guard_runs_exactly_when_its_if_rule_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, blocked: bool
) -> None:
    hooks = _guard(tmp_path, "Bash(git push *)", monkeypatch)
    model = await _run(tmp_path, hooks, _bash(command))
    starts = read_lines(tmp_path / "starts.jsonl")
    result = tool_results(model.requests[1])[0]
    if blocked:
        assert starts == [{"command": command}]
        assert result == "guard says no"
    else:  # not started at all: the command ran
        assert starts == []
        assert "guard says no" not in result


async def test_control_without_if_the_guard_runs_on_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = _guard(tmp_path, None, monkeypatch)
    model = await _run(tmp_path, hooks, _bash("echo hello"))
    assert read_lines(tmp_path / "starts.jsonl") == [{"command": "echo hello"}]
    assert tool_results(model.requests[1]) == ["guard says no"]


async def test_a_path_rule_selects_the_write_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = _guard(tmp_path, "Write(src/**)", monkeypatch)
    inside = ScriptedModel.tool_call("write_file", {"path": "src/a.py", "content": "x"})
    outside = ScriptedModel.tool_call("write_file", {"path": "docs/a.md", "content": "x"})
    model = await _run(tmp_path, hooks, inside, outside)
    ws = (tmp_path / "ws").resolve()
    assert [s["file_path"] for s in read_lines(tmp_path / "starts.jsonl")] == [str(ws / "src/a.py")]
    assert not (ws / "src" / "a.py").exists()
    assert (ws / "docs" / "a.md").exists()
    assert tool_results(model.requests[1]) == ["guard says no"]


@pytest.mark.parametrize("bad", ["Bash(git push", "Bash git", "", 7])
def test_an_if_that_does_not_parse_names_the_source_entry_and_field(bad: Any) -> None:
    data = {"PreToolUse": [{"hooks": [{"type": "command", "command": "true", "if": bad}]}]}
    with pytest.raises(ConfigurationError) as err:
        parse_hooks(data, "/p/.claude/settings.json")
    assert "/p/.claude/settings.json: hooks.PreToolUse[0].hooks[0].if:" in str(err.value)


def test_an_if_on_an_event_without_a_tool_call_never_runs(caplog: pytest.LogCaptureFixture) -> None:
    data = {"Stop": [{"hooks": [{"type": "command", "command": "true", "if": "Bash(git *)"}]}]}
    with caplog.at_level(logging.WARNING):
        assert parse_hooks(data, "s.json") == {}
    assert "hooks.Stop[0].hooks[0].if" in caplog.text
