"""Hooks from a project's files run only for a trusted project; otherwise the notice says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscope_teams.compose import HarnessAgent
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store import InMemoryStore

from ..cli.conftest import Cli
from .helpers import CTX, command_hooks, script


def project(root: Path, *, spec_hooks: bool = False) -> Path:
    """A cloned project whose settings.json hook writes ``root/marker``; returns its agents dir."""
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    command = script(root, "mark.sh", f"cat > {root / 'marker'}\n")
    settings = {"hooks": command_hooks("UserPromptSubmit", command)}
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))
    extra = (
        "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n"
        f"        - type: command\n          command: {command}\n"
        if spec_hooks
        else ""
    )
    (agents / "helper.md").write_text(f"---\ndescription: Helps.\n{extra}---\nYou help.\n")
    (root / "script.yaml").write_text("lead:\n  - All done.\n")
    return agents


@pytest.mark.parametrize("trusted", [False, True])
async def test_settings_hooks_run_only_for_a_trusted_project(tmp_path: Path, trusted: bool) -> None:
    agents = project(tmp_path / "clone")
    lead = HarnessAgent(
        "lead",
        ScriptedModel(["hi"]),
        workspace=tmp_path / "ws",
        specs=agents,
        store=InMemoryStore(),
        trust_project=trusted,
    )
    async with lead:
        await lead.call("hello", CTX)
    marker = tmp_path / "clone" / "marker"
    notice = lead.trust.notice()
    if trusted:  # the control: the same hook runs, with the event on stdin
        assert json.loads(marker.read_text())["prompt"] == "hello"
        assert notice == ""
    else:
        assert not marker.exists()
        assert "UserPromptSubmit" in notice and "settings.json" in notice
        assert "--trust-project" in notice


def test_specs_check_and_run_name_the_hooks_not_enabled(cli: Cli) -> None:
    agents = project(cli.tmp_path / "clone", spec_hooks=True)
    checked = cli.run("specs", "check", str(agents))
    assert checked.returncode == 0, checked.stderr
    out = " ".join(checked.stdout.split())  # the console wraps long lines
    assert "not enabled" in out and "UserPromptSubmit" in out and "PreToolUse[Bash]" in out
    assert "trust add" in out

    script_file = cli.tmp_path / "clone" / "script.yaml"
    args = ["run", "--specs", str(agents), "--model", f"scripted:{script_file}", "hello"]
    done = cli.run(*args, "--store", cli.url)
    assert done.returncode == 0, done.stderr
    assert "not enabled" in done.stderr and "UserPromptSubmit" in done.stderr
    assert not (cli.tmp_path / "clone" / "marker").exists()

    done = cli.run(*args, "--trust-project", "--store", cli.url)  # the control
    assert done.returncode == 0, done.stderr
    assert "not enabled" not in done.stderr
    assert (cli.tmp_path / "clone" / "marker").exists()
