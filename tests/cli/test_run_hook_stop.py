"""``run`` tells the user why a hook stopped the agent: a hook's ``continue: false`` ends the reply
with its ``stopReason`` (Claude Code shows it to the user), and ``systemMessage`` warnings are
printed, in the text view as in ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Cli

ANSWER = {"continue": False, "stopReason": "deploys are frozen", "systemMessage": "audited"}


def _project(root: Path) -> tuple[Path, Path]:
    """A project whose PreToolUse hook on Write stops the agent; a script that writes a file."""
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text("---\nname: helper\ndescription: Helps.\n---\nHelp.\n")
    hook = root / "stop.sh"
    hook.write_text(f"#!/bin/bash\ncat > /dev/null\necho '{json.dumps(ANSWER)}'\n")
    hook.chmod(0o755)
    command = {"type": "command", "command": str(hook)}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [command]}]}}
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))
    script = root / "script.json"
    write = {"name": "write_file", "input": {"path": "a.txt", "content": "x"}}
    script.write_text(json.dumps({"lead": [{"tool_calls": [write]}, "never read"]}))
    return agents, script


def test_the_stop_reason_and_the_warning_are_printed(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    agents, script = _project(root)
    args = ["run", "--specs", str(agents), "--model", f"scripted:{script}", "--trust-project"]
    done = cli.run(*args, "write it", "--store", cli.url, cwd=root)
    assert done.returncode == 0, done.stderr
    assert not (root / "a.txt").exists()
    lines = done.stdout.splitlines()
    assert "[hook] audited" in lines
    assert "stopped by a hook: deploys are frozen" in lines
