"""Commands stopped early: stdout closed by its reader (``| head``) and Ctrl-C during a review.

A closed stdout ends any command quietly with exit code 141 (128 + SIGPIPE, as ``cat`` reports);
Ctrl-C ends a review with ``interrupted`` alone on stderr, exit code 130, every session saved and
resumable.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import anyio
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model import ScriptedModel
from agentscope_teams.sessions import SessionStorage
from agentscope_teams.store import BaseStore

from ..agent.helpers import orphans
from .conftest import CLI, REPO, Cli, interruptible

SAMPLE = REPO / "examples" / "sample_project"


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Cli, str]:
    """A store holding one finished review (sessions, a team, tasks, messages) and its team id."""
    cli = Cli(tmp_path_factory.mktemp("reviewed"))
    out = cli.tmp_path / "review.md"
    result = cli("review", str(SAMPLE), "--json", "--output", str(out))
    assert result.returncode == 0, result.stderr
    end = json.loads(result.stdout.splitlines()[-1])
    return cli, end["team_id"]


def run_with_stdout_closed(cli: Cli, *args: str) -> subprocess.CompletedProcess[str]:
    """The console script writing into a pipe whose reader is already gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [str(CLI), *args, "--store", cli.url],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=cli.env(),
            cwd=REPO,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)


COMMANDS = [
    ["review", str(SAMPLE), "--json"],
    ["review", str(SAMPLE)],
    ["sessions", "list"],
    ["sessions", "list", "--json"],
    ["team", "list"],
    ["team", "show", "{team}"],
    ["team", "tasks", "{team}", "--json"],
    ["team", "messages", "{team}"],
    ["specs", "check", str(REPO / "specs")],
    ["--help"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_closed_stdout_ends_every_command_quietly(
    reviewed: tuple[Cli, str], command: list[str], tmp_path: Path
) -> None:
    cli, team = reviewed
    args = [a.format(team=team) for a in command]
    if args[0] == "review":
        args += ["--output", str(tmp_path / "review.md")]
    result = run_with_stdout_closed(cli, *args)
    assert result.stderr == ""
    assert result.returncode == 141


def test_review_json_piped_into_head(reviewed: tuple[Cli, str], tmp_path: Path) -> None:
    cli, _ = reviewed
    if shutil.which("head") is None:
        pytest.skip("no head(1)")
    script = (
        f"{CLI} review {SAMPLE} --json --output {tmp_path / 'r.md'} --store {cli.url} | head -1;"
        " echo exit=${PIPESTATUS[0]} >&2"
    )
    result = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env=cli.env(), timeout=120
    )
    assert json.loads(result.stdout)["type"] == "review_start"
    assert result.stderr == "exit=141\n"


# -- Ctrl-C --------------------------------------------------------------------------------------


def interrupt_review(cli: Cli, project: Path, delay: float) -> tuple[int, str]:
    """Start a review, send SIGINT ``delay`` s after a member claimed a task; (exit code,
    stderr)."""
    proc = subprocess.Popen(
        [str(CLI), "review", str(project), "--json", "--store", cli.url,
         "--output", str(cli.tmp_path / "review.md")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli.env(), cwd=REPO,
        preexec_fn=interruptible,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            # a member holds a task: its session is in flight, so Ctrl-C must save it too
            if event["type"] == "board" and any(t["owner"] for t in event["tasks"]):
                break
        else:
            pytest.fail("the review ended before a member claimed a task")
        if delay:
            anyio.run(anyio.sleep, delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


async def resume_every_session(store: BaseStore, workspace: Path) -> int:
    """Resume each session the review left (lead and members); the number resumed."""
    records = await SessionStorage(store).list_sessions(None)
    for record in records:
        model = ScriptedModel(["resumed"])
        agent = HarnessAgent(
            record.agent_id, model, workspace=workspace, store=store, busy_timeout=5
        )
        reply = await agent.call("go on", RuntimeContext(session_id=record.session_id))
        assert reply.get_text_content() == "resumed"
        assert orphans(model.requests[-1].messages) == ([], [])
    return len(records)


#: SIGINT at the start, early and late in the members' work (each delay is a full review; finer steps
#: than these are below the scheduling noise of a loaded machine, so they added runs, not cases).
@pytest.mark.parametrize("delay", [0.0, 0.1, 0.3])
def test_ctrl_c_during_a_review_saves_every_session_quietly(
    cli: Cli, tmp_path: Path, delay: float
) -> None:
    project = tmp_path / "project"
    for copy in range(6):  # long enough a review to be interrupted in the middle
        shutil.copytree(SAMPLE, project / f"copy{copy}")
    code, err = interrupt_review(cli, project, delay)
    assert err == "interrupted\n", err  # no "could not save session ...", no traceback
    assert code == 130
    resumed = cli.with_store(lambda store: resume_every_session(store, tmp_path / "ws"))
    assert resumed >= 2  # the lead and at least one member
