"""``run`` gives the lead and its subagents the project's CLAUDE.md memory, with its ``@path``
imports, as Claude Code does; a missing import, a cycle and an import leaving an untrusted project
are notes on stderr, never a crash."""

from __future__ import annotations

import signal
import subprocess
from functools import partial
from pathlib import Path

import anyio
import pytest

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.cli.run_cmd import LEAD_PROMPT
from agentscope_teams.store.jsonfile import JsonFileStore

from .conftest import CLI, REPO, Cli
from .recording_model import LOG_ENV, model, recorded

MODEL = "python:tests.cli.recording_model:model"
HELPER = "---\nname: helper\ndescription: Checks the rules\n---\nYou are the helper.\n"


def _project(root: Path, claude_md: str) -> Path:
    """A Claude Code project: CLAUDE.md, docs/rules.md (importing CLAUDE.md back: a cycle) and
    a ``helper`` agent."""
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "agents" / "helper.md").write_text(HELPER)
    (root / "docs").mkdir()
    (root / "CLAUDE.md").write_text(claude_md)
    (root / "docs" / "rules.md").write_text("RULES-TEXT: never use tabs.\nSee @../CLAUDE.md\n")
    (root / "docs" / "span.md").write_text("SPAN-TEXT")
    (root / "docs" / "fenced.md").write_text("FENCED-TEXT")
    return root


CLAUDE_MD = (
    "PROJECT-TEXT: answer briefly.\n"
    "Follow @docs/rules.md and @docs/missing.md.\n"
    "Not an import: `@docs/span.md`\n"
    "```\n@docs/fenced.md\n```\n"
)


def _run(cli: Cli, cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    log = cli.tmp_path / "requests.jsonl"
    done = cli.run(
        "run", *args, "--model", MODEL, "--store", cli.url, "Do the work",
        cwd=cwd, PYTHONPATH=str(REPO), **{LOG_ENV: str(log)},
    )  # fmt: skip
    return done, log


def test_run_with_claude_agents_gives_the_lead_its_subagent_and_members_the_memory(
    cli: Cli,
) -> None:
    project = _project(cli.tmp_path / "proj", CLAUDE_MD)
    (project / "CLAUDE.local.md").write_text("LOCAL-TEXT: my sandbox is s1.\n")
    elsewhere = cli.tmp_path / "work"
    elsewhere.mkdir()
    done, log = _run(cli, elsewhere, "--specs", str(project / ".claude" / "agents"))
    assert done.returncode == 0, done.stderr
    lead, helper, member = (recorded(log, who) for who in ("lead", "subagent", "member"))
    assert lead and helper and member, log.read_text()
    for system in (lead[0], helper[0], member[0]):
        assert "PROJECT-TEXT: answer briefly." in system
        assert "RULES-TEXT: never use tabs." in system
        assert "LOCAL-TEXT: my sandbox is s1." in system
        assert system.count("PROJECT-TEXT") == 1  # the cycle read CLAUDE.md once
        assert "SPAN-TEXT" not in system and "FENCED-TEXT" not in system
    assert "You are the helper." in helper[0] and "You are the helper." in member[0]
    assert f"note: import @docs/missing.md in {project / 'CLAUDE.md'}: no such file" in done.stderr
    assert "an import cycle (CLAUDE.md -> rules.md -> CLAUDE.md)" in done.stderr
    assert "Traceback" not in done.stderr


def test_run_in_a_project_folder_reads_its_memory_the_folders_above_and_the_users(
    cli: Cli,
) -> None:
    outer = cli.tmp_path / "repo"
    inner = outer / "pkg"
    inner.mkdir(parents=True)
    (outer / "CLAUDE.md").write_text("OUTER-TEXT\n")
    (inner / ".claude").mkdir()
    (inner / ".claude" / "CLAUDE.md").write_text("INNER-TEXT\n")
    home = cli.tmp_path / "home" / ".claude"
    home.mkdir(parents=True)
    (home / "CLAUDE.md").write_text("USER-TEXT\n")
    done, log = _run(cli, inner)
    assert done.returncode == 0, done.stderr
    system = recorded(log, "lead")[0]
    # the user's first, then from the outermost folder in: the most specific comes last
    order = [system.index(t) for t in ("USER-TEXT", "OUTER-TEXT", "INNER-TEXT")]
    assert order == sorted(order), system


def test_an_import_leaving_an_untrusted_project_is_withheld_with_a_note(cli: Cli) -> None:
    secret = cli.tmp_path / "home" / "secret.md"
    secret.parent.mkdir(parents=True)
    secret.write_text("SECRET-TEXT\n")
    project = _project(cli.tmp_path / "proj", "PROJECT-TEXT\nAlso @~/secret.md\n")
    agents = str(project / ".claude" / "agents")
    done, log = _run(cli, project, "--specs", agents)
    assert done.returncode == 0, done.stderr
    system = recorded(log, "lead")[0]
    assert "PROJECT-TEXT" in system and "SECRET-TEXT" not in system
    assert f"import @~/secret.md in {project / 'CLAUDE.md'}: {secret} is outside" in done.stderr
    assert f"agentscope-teams trust add {project}" in done.stderr
    # control: once the project is trusted, the import is followed
    log.unlink()
    done, log = _run(cli, project, "--specs", agents, "--trust-project")
    assert done.returncode == 0, done.stderr
    assert "SECRET-TEXT" in recorded(log, "lead")[0]


def test_a_worker_gives_its_members_the_memory_of_its_specs_project(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(cli.tmp_path / "proj", CLAUDE_MD)
    agents = project / ".claude" / "agents"
    log = cli.tmp_path / "requests.jsonl"
    args = ["worker", "--store", cli.url, "--specs", str(agents), "--model", MODEL]
    worker = subprocess.Popen(
        [str(CLI), *args, "--poll", "0.05", "--org", "acme"],
        cwd=cli.tmp_path,
        env=cli.env(PYTHONPATH=str(REPO), **{LOG_ENV: str(log)}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    monkeypatch.setenv(LOG_ENV, str(log))
    try:
        cli.with_store(partial(_lead_with_worker_members, agents))
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=30)
    member = recorded(log, "member")
    assert member and all("PROJECT-TEXT" not in p for p in recorded(log, "lead"))
    assert "PROJECT-TEXT: answer briefly." in member[0] and "RULES-TEXT" in member[0]
    assert f"note: import @docs/missing.md in {project / 'CLAUDE.md'}: no such file" in err


async def _lead_with_worker_members(agents: Path, store: JsonFileStore) -> None:
    """A lead without the memory whose team's members run in the worker."""
    lead = HarnessAgent(
        "lead", model(), LEAD_PROMPT, specs=agents, store=store, project_memory=False,
        team_options={"run_members": "workers", "poll": 0.05},
    )  # fmt: skip
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
    async with lead:
        with anyio.fail_after(60):
            await lead.call("Do the work", ctx)
