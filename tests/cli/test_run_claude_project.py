"""``agentscope-teams run`` in a Claude Code project (a ``.claude/agents`` folder, no ``./specs``)
uses the project's agents, as ``claude`` started there does; ``./specs`` still comes first."""

from __future__ import annotations

from pathlib import Path

from .conftest import Cli

SCRIPT = """lead:
  - tool_calls:
      - name: agent_spawn
        input: {agent: helper, task: "say hi"}
  - done
helper:
  - hi from the project's helper
"""


def _project(root: Path) -> Path:
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text(
        "---\nname: helper\ndescription: Helps.\n---\nYou are the project helper.\n"
    )
    (root / "script.yaml").write_text(SCRIPT)
    return root


def test_run_without_specs_uses_the_claude_agents_of_the_folder(cli: Cli) -> None:
    root = _project(cli.tmp_path / "proj")
    args = ["run", "--model", f"scripted:{root / 'script.yaml'}", "--store", cli.url, "go"]
    done = cli.run(*args, cwd=root)
    assert done.returncode == 0, done.stderr
    assert "hi from the project's helper" in done.stdout


def test_a_specs_folder_comes_first(cli: Cli) -> None:
    root = _project(cli.tmp_path / "proj")
    (root / "specs").mkdir()
    (root / "specs" / "other.md").write_text(
        "---\nname: other\ndescription: Other.\n---\nYou are the other agent.\n"
    )
    args = ["run", "--model", f"scripted:{root / 'script.yaml'}", "--store", cli.url, "go"]
    done = cli.run(*args, cwd=root)
    assert done.returncode == 0, done.stderr
    assert "unknown agent 'helper'" in done.stdout
