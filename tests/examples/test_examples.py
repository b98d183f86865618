"""Every example runs offline, in a subprocess, and exits 0 (the examples are documentation)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSCOPE_TEAMS_")}
    env.pop("OPENAI_API_KEY", None)
    env.pop("DASHSCOPE_API_KEY", None)
    env["HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_code_review(tmp_path: Path) -> None:
    out = run(tmp_path, str(EXAMPLES / "code_review" / "run.py")).stdout
    assert "# Code review: sample_project" in out
    assert "`app/utils.py:20`" in out and "found by security-scanner" in out


def test_subagents_demo(tmp_path: Path) -> None:
    out = run(tmp_path, str(EXAMPLES / "subagents_demo.py")).stdout
    assert "one nit: rename" in out  # the synchronous answer
    assert "in the background" in out and "Two files changed" in out  # the background run


def test_hitl_approval_across_two_invocations(tmp_path: Path) -> None:
    script, store = str(EXAMPLES / "hitl_approval.py"), f"file://{tmp_path / 'store'}"
    started = run(tmp_path, script, "start", "--store", store).stdout
    assert "paused: the agent wants to run drop_table" in started
    approved = run(tmp_path, script, "approve", "--store", store).stdout
    assert "table 'staging_events' dropped" in approved


def test_resume_after_kill(tmp_path: Path) -> None:
    out = run(tmp_path, str(EXAMPLES / "resume_after_kill.py")).stdout
    assert "killed the worker" in out and "All 5 batches processed." in out


@pytest.mark.parametrize("store", ["redis://localhost:6379/0", "redis://localhost:1/0"])
def test_team_over_redis(tmp_path: Path, store: str) -> None:
    """With Redis when it runs here; an unreachable Redis falls back to a file store."""
    out = run(tmp_path, str(EXAMPLES / "team_over_redis.py"), "--store", store).stdout
    assert "All 4 tasks are finished (4 completed)" in out
    worker_pids = {
        line.rsplit(" ", 1)[-1].rstrip(")")
        for line in out.splitlines()
        if "counted in process" in line
    }
    assert len(worker_pids) == 1 and f"worker process {worker_pids.pop()} stopped" in out
