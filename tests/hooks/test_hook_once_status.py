"""``once`` and ``statusMessage`` of a hook entry. Claude Code honours ``once`` only for hooks in a
skill's frontmatter and ignores it in settings files and agent frontmatter, the only places hooks
come from here: such a hook runs every time, with a warning at load. ``statusMessage`` is the
text Claude Code's spinner shows while the hook runs: here the log line of the hook's start."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from agentscope_teams.errors import ConfigurationError
from agentscope_teams.hooks import parse_hooks
from agentscope_teams.model import ScriptedModel

from .helpers import CTX, agent, script

WRITE = ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"})


def _settings(tmp_path: Path, entry: dict) -> Path:
    """A project whose settings.json has ``entry`` on PostToolUse; returns its agents folder."""
    root = tmp_path / "proj"
    (root / ".claude" / "agents").mkdir(parents=True)
    settings = {"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [entry]}]}}
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))
    return root / ".claude" / "agents"


async def test_once_in_a_settings_file_is_ignored_as_claude_code_ignores_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = tmp_path / "runs.log"
    command = script(tmp_path, "h.sh", f"cat >/dev/null\necho run >> {log}\n")
    agents = _settings(tmp_path, {"type": "command", "command": command, "once": True})
    model = ScriptedModel([WRITE, "done", WRITE, "done again"])
    with caplog.at_level(logging.WARNING):
        lead = agent(tmp_path, model, specs=agents, trust_project=True, teams=False)
    assert "settings.json: hooks.PostToolUse[0].hooks[0].once" in caplog.text
    async with lead as a:
        await a.call("write it", CTX)
        await a.call("write it again", CTX)
    assert log.read_text().splitlines() == ["run", "run"]  # every time, in the same session


def test_once_must_be_a_boolean() -> None:
    data = {"Stop": [{"hooks": [{"command": "true", "once": "yes"}]}]}
    with pytest.raises(ConfigurationError, match=r"hooks\.Stop\[0\]\.hooks\[0\]\.once"):
        parse_hooks(data, "settings.json")


async def test_the_status_message_is_logged_when_the_hook_starts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    command = script(tmp_path, "h.sh", "cat >/dev/null\n")
    entry = {"type": "command", "command": command, "statusMessage": "Checking the write..."}
    model = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, model, hooks={"PostToolUse": [{"hooks": [entry]}]}) as a:
        with caplog.at_level(logging.INFO, logger="agentscope_teams.hooks"):
            await a.call("write it", CTX)
    lines = [r.getMessage() for r in caplog.records if "Checking the write..." in r.getMessage()]
    assert lines == [f"hook PostToolUse {command}: Checking the write..."]


def test_a_status_message_must_be_a_string() -> None:
    data = {"Stop": [{"hooks": [{"command": "true", "statusMessage": 3}]}]}
    with pytest.raises(ConfigurationError, match=r"hooks\.Stop\[0\]\.hooks\[0\]\.statusMessage"):
        parse_hooks(data, "settings.json")


def test_strict_check_flags_once_and_an_if_that_never_runs(tmp_path: Path) -> None:
    from agentscope_teams.subagents import SubagentSpec
    from agentscope_teams.subagents.strict import spec_problems

    path = tmp_path / "v.md"
    path.write_text(
        "---\ndescription: V.\nhooks:\n  Stop:\n    - hooks:\n"
        "        - command: ./check.sh\n          if: Bash(git *)\n"
        "  PostToolUse:\n    - matcher: Write\n      hooks:\n"
        "        - command: ./fmt.sh\n          once: true\n          if: Write(src/**)\n"
        "---\nBody.\n"
    )
    reasons = sorted(p.reason for p in spec_problems(SubagentSpec.from_file(path), None))
    assert reasons == [
        "hooks.PostToolUse[0].hooks[0]: once is ignored (Claude Code honours it only in a "
        "skill's frontmatter)",
        "hooks.Stop[0].hooks[0]: if on Stop, which has no tool call: this hook never runs",
    ]
