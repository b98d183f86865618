"""``run --specs`` of a cloned project: its own MCP servers stay off (named on stderr, with how to
enable them) until ``--trust-project``, which also remembers the decision for later runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .conftest import Cli

WRITE_MARKER = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(' '.join(sys.argv[2:]))"


def cloned_project(root: Path) -> Path:
    """A project whose .mcp.json names a command that writes a marker with $CLONED_SECRET."""
    server = {
        "command": sys.executable,
        "args": ["-c", WRITE_MARKER, str(root / "marker"), "${CLONED_SECRET}"],
    }
    root.mkdir(parents=True)
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": server}}))
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text("---\ndescription: Helps with anything.\n---\nYou help.\n")
    (root / "script.yaml").write_text("lead:\n  - All done.\n")
    return agents


def run(cli: Cli, agents: Path, *extra: str) -> tuple[int, str, str]:
    script = agents.parent.parent / "script.yaml"
    args = ["run", "--specs", str(agents), "--model", f"scripted:{script}", *extra, "hello"]
    done = cli.run(*args, "--store", cli.url, CLONED_SECRET="s3cret-value")
    return done.returncode, done.stdout, done.stderr


def test_run_leaves_an_untrusted_project_s_servers_off_and_says_how_to_enable_them(
    cli: Cli,
) -> None:
    agents = cloned_project(cli.tmp_path / "clone")
    code, _, err = run(cli, agents)
    assert code == 0, err
    assert not (cli.tmp_path / "clone" / "marker").exists()  # the command never ran
    assert "not enabled, project" in err and "MCP server 'proj'" in err
    assert "--trust-project" in err and "agentscope-teams trust add" in err

    # the control: trusted, the same command runs with the variable expanded
    code, _, err = run(cli, agents, "--trust-project")
    assert code == 0, err
    assert (cli.tmp_path / "clone" / "marker").read_text() == "s3cret-value"
    assert "not enabled" not in err

    # remembered: a later run without the flag starts it too
    (cli.tmp_path / "clone" / "marker").unlink()
    code, _, err = run(cli, agents)
    assert code == 0 and (cli.tmp_path / "clone" / "marker").exists(), err


def test_trust_add_of_a_path_that_does_not_exist_is_refused_and_trusts_nothing(cli: Cli) -> None:
    missing = cli.tmp_path / "src" / "projct"  # a typo: its parent must not become trusted
    (cli.tmp_path / "src").mkdir()
    done = cli.run("trust", "add", str(missing))
    assert done.returncode == 1, done.stdout
    assert f"cannot trust {missing}: no such file or folder" in done.stderr
    assert "Traceback" not in done.stderr
    listed = cli.run("trust", "list")
    assert str(cli.tmp_path / "src") not in listed.stdout

    # the control: the real folder is trusted
    (cli.tmp_path / "src" / "project").mkdir()
    done = cli.run("trust", "add", str(cli.tmp_path / "src" / "project"))
    assert done.returncode == 0, done.stderr
    assert str((cli.tmp_path / "src" / "project").resolve()) in cli.run("trust", "list").stdout


def project_with_bypass_agent(root: Path) -> Path:
    """A project whose agent file asks for bypassPermissions and runs a command writing a
    marker (a command needs confirmation in the parent's default mode)."""
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "runner.md").write_text(
        "---\nname: runner\ndescription: Runs commands.\ntools: Bash\n"
        "permissionMode: bypassPermissions\n---\nYou run commands.\n"
    )
    spawn = {"name": "agent_spawn", "input": {"agent": "runner", "task": "run it"}}
    touch = {"name": "Bash", "input": {"command": f"touch {root / 'marker'}"}}
    script = {
        "lead": [{"tool_calls": [spawn]}, "All done."],
        "runner": [{"tool_calls": [touch]}, "Ran it."],
    }
    (root / "script.yaml").write_text(json.dumps(script))
    return agents


def test_run_withholds_an_untrusted_agent_file_s_bypass_mode_and_says_how_to_enable_it(
    cli: Cli,
) -> None:
    agents = project_with_bypass_agent(cli.tmp_path / "clone")
    marker = cli.tmp_path / "clone" / "marker"
    code, _, err = run(cli, agents, "--sandbox", "unsafe-host")
    assert code == 0, err
    assert not marker.exists()  # the command asked (nobody to answer a subagent) and never ran
    assert "not enabled, project" in err and "permissionMode 'bypassPermissions'" in err
    assert "runner.md" in err and "--trust-project" in err

    # the control: trusted, the agent runs in bypassPermissions and the command runs unasked
    code, _, err = run(cli, agents, "--sandbox", "unsafe-host", "--trust-project")
    assert code == 0, err
    assert marker.exists() and "not enabled" not in err


def test_specs_check_names_an_untrusted_agent_file_s_withheld_mode_and_allow_rules(
    cli: Cli,
) -> None:
    agents = project_with_bypass_agent(cli.tmp_path / "clone")
    (agents / "echoer.md").write_text(
        "---\nname: echoer\ndescription: Echoes.\ntools: Bash(echo:*)\n---\nYou echo.\n"
    )
    done = cli.run("specs", "check", "--json", str(agents))
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    withheld = {(x["feature"], x["name"]) for x in lines if x["kind"] == "not_enabled"}
    assert withheld == {
        ("permissionMode", "bypassPermissions"),
        ("tools: allow rule", "Bash(echo:*)"),
    }, done.stdout
    text = cli.run("specs", "check", str(agents)).stdout
    assert "permissionMode 'bypassPermissions'" in text and "trust add" in text

    # the control: trusted, nothing is left off
    assert cli.run("trust", "add", str(agents)).returncode == 0
    done = cli.run("specs", "check", "--json", str(agents))
    assert '"not_enabled"' not in done.stdout, done.stdout
