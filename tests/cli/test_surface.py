"""One surface: the model strings and options of ``run`` also work in ``worker`` and the Python API,
and ``run``'s output reads right (own lines for answers, board lines and interruptions)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.cli.run_view import RunSummary, RunView
from agentscope_teams.cli.worker_cmd import _model as worker_model
from agentscope_teams.errors import ModelConfigurationError
from agentscope_teams.events import TextDeltaEvent
from agentscope_teams.model import model_from_string
from agentscope_teams.model.factory import model_from_spec, model_name_problem
from agentscope_teams.model.script_file import ScriptFileModel
from agentscope_teams.store import InMemoryStore
from agentscope_teams.subagents import load_specs
from agentscope_teams.teams import Task, TaskStatus

from .conftest import CLI, REPO, Cli, interruptible

SPEC = "---\nname: explorer\ndescription: explores\n---\nYou explore the files.\n"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_scripted_file_in_the_python_api(tmp_path: Path) -> None:
    script = _write(tmp_path / "s.yaml", "lead: [{tool_calls: [{name: list_files}]}, Two files.]\n")
    (tmp_path / "a.txt").write_text("a")

    async def main() -> str:
        async with HarnessAgent(
            "me", f"scripted:{script}", "Any prompt.", workspace=tmp_path, store=InMemoryStore()
        ) as agent:
            reply = await agent.call("go", RuntimeContext(session_id="s1"))
            return reply.get_text_content() or ""

    assert anyio.run(main) == "Two files."


def test_worker_reads_scripted_and_python_models_and_tells_specs_apart(tmp_path: Path) -> None:
    script = _write(tmp_path / "s.yaml", "explorer: [found it]\n")
    specs = load_specs(_write(tmp_path / "specs" / "explorer.md", SPEC).parent).specs
    model = worker_model(f"scripted:{script}", specs)
    assert isinstance(model, ScriptFileModel)
    assert model.router.prompts == {"explorer": "You explore the files."}
    python = worker_model("python:agentscope_teams.review.offline_model:offline_model", specs)
    assert python is not None and python.model_name.startswith("offline-review")


def test_a_spec_file_cannot_name_models_that_run_code_or_read_files(tmp_path: Path) -> None:
    for name in ("python:os:getcwd", f"scripted:{tmp_path / 's.yaml'}"):
        problem = model_name_problem(name)
        assert problem is not None and "cannot come from a spec file" in problem
        with pytest.raises(ModelConfigurationError, match="--model or HarnessAgent"):
            model_from_spec(name)
    assert model_name_problem("openai:gpt-4o-mini") is None


def test_an_installed_package_registers_a_model_without_an_edit_here(tmp_path: Path) -> None:
    """An entry point of a distribution on the path: the factory builds it by name and scheme."""
    _write(
        tmp_path / "plugin_models.py",
        """
        from agentscope_teams.model import ScriptedModel
        def named():
            return ScriptedModel(["named"], name="named")
        def schemed(rest):
            return ScriptedModel([rest], name="schemed")
    """,
    )
    _write(
        tmp_path / "plugin_models-1.0.dist-info" / "METADATA",
        """
        Metadata-Version: 2.1
        Name: plugin-models
        Version: 1.0
    """,
    )
    _write(
        tmp_path / "plugin_models-1.0.dist-info" / "entry_points.txt",
        """
        [agentscope_teams.models]
        mine = plugin_models:named
        [agentscope_teams.model_schemes]
        echo = plugin_models:schemed
    """,
    )
    code = (
        "from agentscope_teams.model import model_from_string, registered_models\n"
        "print(model_from_string('mine').model_name, model_from_string('echo:hi').model_name,\n"
        "      'mine' in registered_models(), type(model_from_string('offline')).__name__)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["named", "schemed", "True", "OfflineReviewModel"]


def test_run_without_a_spec_directory_runs_the_lead_alone(cli: Cli) -> None:
    here = cli.tmp_path / "work"
    script = _write(here / "s.yaml", "lead: ['The final answer.']\n")
    done = cli.run("run", "--model", f"scripted:{script}", "hi", "--store", cli.url, cwd=here)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # the answer ends its line: the token table starts on the next one
    assert lines[0] == "The final answer."
    assert lines[1] == "tokens used (as reported by the model):"


def test_run_takes_mcp_servers_from_mcp_config(cli: Cli) -> None:
    here = cli.tmp_path / "work"
    server = {
        "command": sys.executable,
        "args": ["-m", "mcp_server_time"],
        "trustAnnotations": True,
    }
    config = _write(here / "tools.json", json.dumps({"mcpServers": {"time": server}}))
    call = {"name": "mcp__time__get_current_time", "input": {"timezone": "UTC"}}
    script = _write(here / "s.yaml", json.dumps({"lead": [{"tool_calls": [call]}, "done"]}))
    args = ["--model", f"scripted:{script}", "--mcp-config", str(config), "time?"]
    done = cli.run("run", *args, "--store", cli.url, cwd=here)
    assert done.returncode == 0, done.stderr
    assert "<- mcp__time__get_current_time: " in done.stdout
    assert '"timezone": "UTC"' in done.stdout  # the server's answer reached the lead


def test_board_lines_wait_for_the_streamed_line_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    view = RunView(RunSummary(session_id="s", model="m"), json=False)

    def text(t: str) -> None:
        view.agent_event(TextDeltaEvent(text=t, agent="lead", reply_id="r"))

    task = Task(id="t-1", seq=1, title="scan", status=TaskStatus.IN_PROGRESS, owner="w1")
    text("The review is half ")
    view.board([task])
    text("done\nand goes ")
    text("on.")
    view.end_line()
    assert capsys.readouterr().out.splitlines() == [
        "The review is half done",
        "[team] tasks: 1 in_progress (w1: scan)",
        "and goes on.",
    ]


SLOW_MODEL = """
import anyio
from agentscope_teams.model import ScriptedModel, TextDelta

class Slow(ScriptedModel):
    async def stream(self, request):
        yield TextDelta(text="A partial ans")
        await anyio.sleep(60)

def build():
    return Slow(["unused"])
"""


def test_ctrl_c_ends_the_line_and_says_how_to_continue(cli: Cli) -> None:
    here = cli.tmp_path / "work"
    _write(here / "slow_model.py", SLOW_MODEL)
    cmd = [str(CLI), "run", "--model", "python:slow_model:build", "--session", "s-42"]
    cmd += ["--user", "alice", "go", "--store", cli.url]
    env = cli.env(PYTHONPATH=str(here))
    with subprocess.Popen(
        cmd,
        cwd=here,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    ) as proc:
        assert proc.stdout is not None
        seen = ""
        deadline = time.monotonic() + 60
        while "partial" not in seen and time.monotonic() < deadline:
            seen += os.read(proc.stdout.fileno(), 1024).decode()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    out = seen + out
    assert proc.returncode == 130, err
    assert out.endswith("A partial ans\n")
    lines = err.splitlines()
    assert "interrupted" in lines, err
    assert "Traceback" not in err and "destroyed" not in err and "never awaited" not in err
    assert any("agentscope-teams run --session s-42 --user alice" in line for line in lines)
    listed = cli("sessions", "list", "--user", "alice", "--json")
    assert "s-42" in listed.stdout, listed.stderr


def test_ids_are_not_folded_when_piped(cli: Cli) -> None:
    here = cli.tmp_path / "work"
    script = _write(here / "s.yaml", "lead: [ok]\n")
    long_id = "session-" + "x" * 110
    run = ["run", "--model", f"scripted:{script}", "--session", long_id, "hi"]
    assert cli.run(*run, "--store", cli.url, cwd=here).returncode == 0
    env = {k: v for k, v in cli.env().items() if k != "COLUMNS"}
    listed = subprocess.run(
        [str(CLI), "sessions", "list", "--store", cli.url],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert any(long_id in line for line in listed.stdout.splitlines()), listed.stdout


def test_model_from_string_names_every_scheme_when_it_knows_none() -> None:
    with pytest.raises(ModelConfigurationError) as info:
        model_from_string("nope:x")
    for usage in ("'scripted:FILE'", "'python:package.module:attribute'", "'openai:<model>'"):
        assert usage in str(info.value)


def test_runs_with_a_team_leave_no_task_pending(cli: Cli) -> None:
    """The lead, a subagent and a team member, several times: nothing is left pending when the
    event loop ends (no "Task was destroyed but it is pending!", no coroutine never awaited)."""
    here = cli.tmp_path / "work"
    shutil.copytree(REPO / "examples" / "sample_project", here / "examples" / "sample_project")
    example = REPO / "examples" / "scripted_run"
    args = [
        "run",
        "--specs",
        str(example / "specs"),
        "--model",
        f"scripted:{example / 'script.yaml'}",
    ]
    for _ in range(3):
        done = cli.run(*args, "Survey", "--store", cli.url, cwd=here)
        assert done.returncode == 0, done.stderr
        assert "destroyed" not in done.stderr and "never awaited" not in done.stderr, done.stderr
        assert "Task was" not in done.stdout
