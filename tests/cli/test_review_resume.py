"""``agentscope-teams review --resume``: a review killed (SIGKILL) mid-way and resumed from the store.

The real console script runs on a copy of the sample project with a private HOME (so a private
analysis cache) and a file store. It is killed as soon as one task is completed, then
``review --resume`` finishes it: the report equals a clean run's, every file was analysed once over
both processes, and the tasks completed before the kill were not written again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store.url import store_from_url
from agentscope_teams.teams import LocalTeamClient, TaskStatus

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("agentscope-teams")
SAMPLE = REPO / "examples" / "sample_project"
LOG = Path("home/.cache/agentscope_teams/review/analyses.jsonl")
BULLET = re.compile(r"^- `(?P<loc>[^`]+)` — .* \((?P<rule>[A-Za-z0-9-]+), confidence")

pytestmark = pytest.mark.slow


def env(root: Path) -> dict[str, str]:
    out = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AGENTSCOPE_TEAMS_")
        and k not in ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "XDG_CACHE_HOME")
    }
    out.update(HOME=str(root / "home"), COLUMNS="200", NO_COLOR="1", TERM="dumb")
    return out


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), *args, "--store", f"file://{root / 'store'}"],
        capture_output=True, text=True, env=env(root), cwd=root, timeout=300, check=False,
    )  # fmt: skip


def findings(report: str) -> set[tuple[str, str]]:
    return {(m["loc"], m["rule"]) for line in report.splitlines() if (m := BULLET.match(line))}


def board(root: Path) -> dict[str, dict[str, object]]:
    teams = cli(root, "team", "list", "--all", "--json")
    (team,) = [json.loads(line) for line in teams.stdout.splitlines()]
    tasks = cli(root, "team", "tasks", team["id"], "--json")
    return {t["id"]: t for t in map(json.loads, tasks.stdout.splitlines())}


def completed_tasks(root: Path) -> int:
    """Tasks completed so far, read from the store the review writes (0 before the team exists)."""

    async def count() -> int:
        async with store_from_url(f"file://{root / 'store'}") as store:
            client = LocalTeamClient(store, RuntimeContext(session_id="test-watch"))
            teams = await client.list_teams()
            tasks = [t for team in teams for t in await client.list_tasks(team.id)]
            return sum(1 for t in tasks if t.status is TaskStatus.COMPLETED)

    return anyio.run(count)


def analysed(root: Path) -> Counter[str]:
    lines = (root / LOG).read_text().splitlines()
    return Counter(p for line in lines for p in json.loads(line)["paths"])


def test_a_killed_review_resumes_to_the_same_report_without_redoing_work(tmp_path: Path) -> None:
    clean_root, root = tmp_path / "clean", tmp_path / "killed"
    for r in (clean_root, root):
        shutil.copytree(SAMPLE, r / "project")
    clean = cli(clean_root, "review", "project", "--output", "clean.md")
    assert clean.returncode == 0, clean.stderr

    args = [str(CLI), "review", "project", "--output", "review.md"]
    proc = subprocess.Popen(
        [*args, "--store", f"file://{root / 'store'}"],
        env=env(root), cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if (root / "store").exists() and completed_tasks(root) > 0:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert not (root / "review.md").exists(), "the review finished before it could be killed"
    before = board(root)
    done_before = {i: t for i, t in before.items() if t["status"] == "completed"}
    assert 1 <= len(done_before) < 9  # killed mid-review, with some tasks done

    resumed = cli(root, "review", "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "files reviewed: 8 in 9 tasks by 3 members" in resumed.stdout
    report = (root / "review.md").read_text()  # the --output the review started with
    assert findings(report) == findings((clean_root / "clean.md").read_text())
    assert analysed(root) == Counter({p: 1 for p in analysed(clean_root)})
    after = board(root)
    assert len(after) == 9 and {t["status"] for t in after.values()} == {"completed"}
    for task_id, task in done_before.items():
        assert after[task_id]["result"] == task["result"]
        assert (after[task_id]["version"], after[task_id]["attempts"]) == (task["version"], 1)

    again = cli(root, "review", "--resume")
    assert again.returncode == 1
    assert "no unfinished review in this store" in again.stderr
