"""``agentscope-teams sessions import`` as a real subprocess, over sessions AgentScope 2.0.11 wrote."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from ...cli.conftest import Cli
from .anchor import write_sessions


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def test_import_dry_run_then_real_then_again(
    agentscope_python: Path, cli: Cli, tmp_path: Path
) -> None:
    db = tmp_path / "agentscope.db"
    write_sessions(agentscope_python, "alice", "sql", f"sqlite+aiosqlite:///{db}")
    source = f"sqlite:///{db}"
    target = f"sqlite:///{tmp_path / 'ours.db'}"

    dry = cli.run("sessions", "import", "--from", source, "--to", target, "--dry-run")
    assert dry.returncode == 1, dry.stderr  # refused sessions make the exit code 1
    lines = dry.stdout.splitlines()
    assert sum(line.startswith("would create") for line in lines) == 4
    refused = [line for line in lines if line.startswith("refused")]
    assert len(refused) == 2 and any("dont_ask" in line for line in refused)
    assert "would convert 4 session(s)" in lines[-1] and "refused 2" in lines[-1]
    listed = cli.run("sessions", "list", "--user", "alice", "--store", target, "--json")
    assert listed.returncode == 0 and listed.stdout == "", listed.stdout

    real = cli.run("sessions", "import", "--from", source, "--to", target, "--json")
    assert real.returncode == 1, real.stderr
    docs = [json.loads(line) for line in real.stdout.splitlines()]
    assert docs[-1]["summary"] == {"created": 4, "updated": 0, "unchanged": 0, "refused": 2}
    listed = cli.run("sessions", "list", "--user", "alice", "--store", target, "--json")
    ids = sorted(json.loads(line)["session_id"] for line in listed.stdout.splitlines())
    assert ids == ["s-asking", "s-media", "s-text", "s-tools"]
    shown = cli.run(
        "sessions", "show", "s-tools", "--agent", "coder", "--user", "alice", "--store", target
    )
    assert shown.returncode == 0 and "Done: README.md and src." in shown.stdout

    again = cli.run("sessions", "import", "--from", source, "--to", target)
    assert sum(line.startswith("unchanged") for line in again.stdout.splitlines()) == 4
    assert "converted 4 session(s)" in again.stdout
    assert "created 0, updated 0, unchanged 4" in again.stdout


@pytest.mark.parametrize(
    "source",
    ["ftp://nowhere/x", "sqlite:////no/such/agentscope.db", "redis://127.0.0.1:1/0"],
)
def test_bad_source_is_one_line_without_traceback(cli: Cli, source: str) -> None:
    done = cli.run("sessions", "import", "--from", source, "--to", f"memory://{uuid.uuid4().hex}")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error:"), done.stderr
