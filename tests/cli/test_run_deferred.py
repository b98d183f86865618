"""``run`` and a PreToolUse hook's ``defer``: the run stops with the call pending and says how to
resume; ``run --session ID`` without a prompt resumes it (the hook runs again), as Claude Code's
``claude -p --resume ID`` does."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Cli

HOOK = """#!/bin/bash
cat > /dev/null
d="$(cat "$(dirname "$0")/decision")"
echo "{\\"hookSpecificOutput\\": {\\"permissionDecision\\": \\"$d\\", \\"permissionDecisionReason\\": \\"policy: $d\\"}}"
"""


def _project(root: Path) -> Path:
    """A project whose PreToolUse hook on Write answers what the file ``decision`` says."""
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text("---\nname: helper\ndescription: Helps.\n---\nHelp.\n")
    hook = root / "decide.sh"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    command = {"type": "command", "command": str(hook)}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [command]}]}}
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))
    return agents


def _script(root: Path, name: str, turns: list[object]) -> str:
    path = root / name
    path.write_text(json.dumps({"lead": turns}))
    return f"scripted:{path}"


def test_a_deferred_call_stops_the_run_and_run_without_a_prompt_resumes_it(
    cli: Cli, tmp_path: Path
) -> None:
    root = tmp_path / "proj"
    agents = _project(root)
    write = {"name": "write_file", "input": {"path": "a.txt", "content": "x"}}
    first = _script(root, "first.json", [{"tool_calls": [write]}])  # one model turn only
    common = ["--specs", str(agents), "--trust-project", "--session", "s1", "--store", cli.url]
    (root / "decision").write_text("defer")
    stopped = cli.run("run", "--model", first, *common, "write it", cwd=root)
    assert stopped.returncode == 0, stopped.stderr
    assert not (root / "a.txt").exists()
    assert "write_file" in stopped.stdout and "deferred by a PreToolUse hook" in stopped.stdout
    assert "agentscope-teams run --session s1" in stopped.stdout
    assert "policy: defer" in stopped.stdout  # the hook's reason
    shown = cli.run("sessions", "show", "s1", "--agent", "lead", "--store", cli.url, cwd=root)
    assert shown.returncode == 0, shown.stderr
    assert "a PreToolUse hook deferred 1 tool call(s)" in shown.stdout
    assert 'write_file {"path": "a.txt", "content": "x"} (reason: policy: defer)' in shown.stdout

    (root / "decision").write_text("allow")
    second = _script(root, "second.json", ["written"])
    resumed = cli.run("run", "--model", second, *common, cwd=root)
    assert resumed.returncode == 0, resumed.stderr
    assert (root / "a.txt").read_text() == "x"
    assert "written" in resumed.stdout


def test_run_without_a_prompt_or_a_session_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    done = cli.run("run", "--model", _script(tmp_path, "s.json", ["hi"]), "--store", cli.url)
    assert done.returncode == 2 and "PROMPT" in done.stderr
