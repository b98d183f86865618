"""``agentscope-teams run --model scripted:FILE``: the whole command without a key, as a subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from agentscope_teams.cli.scripted_file import scripted_model
from agentscope_teams.errors import ModelError
from agentscope_teams.message import UserMsg
from agentscope_teams.model import ModelRequest

from .conftest import REPO, Cli, one_error_line

EXAMPLE = REPO / "examples" / "scripted_run"
PROMPT = "Survey examples/sample_project"


def _call(cli: Cli, script: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``run`` in a directory holding a copy of the sample project (the example's paths)."""
    here = cli.tmp_path / "work"
    if not here.exists():
        shutil.copytree(REPO / "examples" / "sample_project", here / "examples" / "sample_project")
    args = ["--specs", str(EXAMPLE / "specs"), "--model", f"scripted:{script}", *extra, PROMPT]
    return cli.run("run", *args, "--store", cli.url, cwd=here)


def _run(cli: Cli, script: Path, *extra: str) -> tuple[int, str, str]:
    done = _call(cli, script, *extra)
    return done.returncode, done.stdout, done.stderr


def test_the_example_spawns_a_subagent_builds_a_team_and_summarizes(cli: Cli) -> None:
    code, out, err = _run(cli, EXAMPLE / "script.yaml")
    assert code == 0, err
    lines = out.splitlines()
    # streamed text, the calls and the results of the delegated work, in order
    assert lines[0] == "First I ask the explorer subagent what the project holds."
    assert lines[1].startswith("-> agent_spawn(agent='explorer'")
    assert "I listed the Python files of examples/sample_project with glob_files." in out
    assert "-> createTeam(name='survey'" in out
    assert "<- assignTask: Created task t-1 (assigned to checker-1)." in out
    assert "   t-1 [completed] 'Look for hard-coded secrets' owner=checker-1" in out
    assert "[team] tasks: 1 completed" in out
    finished = next(i for i, line in enumerate(lines) if line.startswith("run finished in "))
    assert lines.index("<- waitForTeam:") < finished
    # the summary
    assert "model calls (lead): 5, tokens 0 in / 0 out" in lines
    assert (
        "tool calls (lead): agent_spawn x1, assignTask x1, createTeam x1, spawnMember x1, "
        "waitForTeam x1"
    ) in lines
    assert "subagents spawned: 1" in lines
    assert any(line.startswith("team team-") and line.endswith(": 1 completed") for line in lines)
    assert lines[-1].startswith("session ")
    # the example's specs share the lead's directory: no member or subagent directories appear
    assert sorted(p.name for p in (cli.tmp_path / "work").iterdir()) == ["examples"]


def test_json_output_ends_with_the_counts(cli: Cli) -> None:
    code, out, err = _run(cli, EXAMPLE / "script.yaml", "--json")
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    types = [e["type"] for e in events]
    assert "text_delta" in types and "tool_call" in types and "board" in types
    end = events[-1]
    assert end["type"] == "run_end"
    assert end["tool_calls"]["agent_spawn"] == 1 and end["tasks"] == {"completed": 1}


def test_a_script_that_runs_out_names_the_agent(cli: Cli, tmp_path: Path) -> None:
    script = tmp_path / "short.json"
    script.write_text(json.dumps({"lead": [{"tool_calls": [{"name": "list_files"}]}]}))
    done = _call(cli, script)
    assert done.returncode != 0
    assert f"model script {script} has 1 turn(s) for 'lead'" in one_error_line(done)
    assert "-> list_files()" in done.stdout


def test_a_bad_script_is_named_with_the_field(cli: Cli, tmp_path: Path) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text("lead:\n  - tool_calls: [{input: {}}]\n")
    code, _, err = _run(cli, script)
    assert code != 0
    assert "Traceback" not in err
    assert f"model script {script}: lead.0._Turn.tool_calls.0.name: Field required" in err


def test_a_script_that_is_not_utf8_is_named_with_what_to_do(cli: Cli, tmp_path: Path) -> None:
    script = tmp_path / "latin1.yaml"
    script.write_bytes("lead: ['caf\u00e9']\n".encode("latin-1"))
    done = _call(cli, script)
    assert done.returncode == 1
    assert f"model script {script} is not valid UTF-8" in one_error_line(done)
    assert "save it as UTF-8" in one_error_line(done)


@pytest.mark.parametrize(("name", "text"), [("bad.yaml", "lead:\n  - [x\n"), ("bad.json", "{\n,")])
def test_a_script_that_does_not_parse_is_named_with_its_line(
    cli: Cli, tmp_path: Path, name: str, text: str
) -> None:
    script = tmp_path / name
    script.write_text(text)
    done = _call(cli, script)
    assert done.returncode == 1
    assert f"model script {script}:" in one_error_line(done)
    assert "<unicode string>" not in one_error_line(done)


def test_a_request_from_an_unknown_agent_names_the_script_and_the_known_specs(
    tmp_path: Path,
) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("lead: [done]\nexplorer: [found]\n")
    model, router = scripted_model(f"scripted:{script}", "You lead.")
    router.know_specs({"explorer": "You explore.", "silent": "  "})
    request = ModelRequest(system_prompt="Some other agent.", messages=[UserMsg("hi")])
    with pytest.raises(ModelError) as info:
        router(request)
    message = str(info.value)
    assert f"model script {script}:" in message
    assert "(specs with one: explorer)" in message and "--specs" in message
    assert model.name == "scripted:s.yaml"
