"""``agentscope-teams review`` end to end: the real console script, the offline model, a file store.

The sample project is copied to a temporary directory, so nothing is written into the repository.
One run (module fixture) is checked against ``PLANTED.json``: every planted problem at its file and
line, credited to the member whose area it is, and nothing for the clean files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("agentscope-teams")
SAMPLE = REPO / "examples" / "sample_project"
PLANTED = [p for p in json.loads((SAMPLE / "PLANTED.json").read_text()) if p.get("found", True)]
FINDER = {"security": "security-scanner", "performance": "perf-tester", "quality": "reviewer"}
CLEAN = ("app/__init__.py", "app/models.py", "app/pagination.py")
SAMPLE_FILES = sorted(p.name for p in (SAMPLE / "app").glob("*.py"))
BULLET = re.compile(
    r"^- `(?P<loc>[^`]+)` — .* \((?P<rule>[A-Za-z0-9-]+), confidence (high|medium|low)\)"
    r"( — fix: .+)? — found by (?P<who>.+)$"
)


@dataclass
class Run:
    result: subprocess.CompletedProcess[str]
    report: str
    root: Path

    @property
    def store(self) -> str:
        return f"file://{self.root / 'store'}"


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The console script with a private HOME and no API key in the environment."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AGENTSCOPE_TEAMS_")
        and k not in ("OPENAI_API_KEY", "DASHSCOPE_API_KEY")
    }
    env.update(HOME=str(root / "home"), COLUMNS="200", NO_COLOR="1", TERM="dumb")
    return subprocess.run(
        [str(CLI), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=120,
        check=False,
    )


def review(root: Path, *extra: str) -> Run:
    project = root / "sample_project"
    shutil.copytree(SAMPLE, project)
    out = root / "review.md"
    store = f"file://{root / 'store'}"
    result = cli(root, "review", str(project), "--store", store, "--output", str(out), *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    return Run(result, out.read_text(), root)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return review(tmp_path_factory.mktemp("review"))


def findings(report: str) -> dict[tuple[str, str], str]:
    """(file:line, rule) -> who found it, from the report's bullets."""
    out = {}
    for line in report.splitlines():
        m = BULLET.match(line)
        if m:
            out[(m["loc"], m["rule"])] = m["who"]
    return out


def test_every_planted_problem_is_reported_at_its_line_by_the_right_member(run: Run) -> None:
    found = findings(run.report)
    expected = {(f"{p['file']}:{p['line']}", p["rule"]): FINDER[p["category"]] for p in PLANTED}
    assert found == expected


def test_the_report_is_grouped_by_severity_with_counts(run: Run) -> None:
    counts = {
        s: sum(1 for p in PLANTED if p["severity"] == s)
        for s in ("critical", "high", "medium", "low")
    }
    for severity, n in counts.items():
        assert f"| {severity} | {n} |" in run.report
        assert f"## {severity.capitalize()} ({n})" in run.report
    headings = [h for h in run.report.splitlines() if h.startswith("## ") and "(" in h]
    assert headings == [f"## {s.capitalize()} ({n})" for s, n in counts.items() if n]


def test_clean_files_have_no_findings_and_are_listed_as_clean(run: Run) -> None:
    assert not [loc for loc, _ in findings(run.report) if loc.split(":")[0] in CLEAN]
    assert "No findings in " + ", ".join(f"`{c}`" for c in CLEAN) + "." in run.report


def test_the_output_announces_the_offline_model_and_summarizes(run: Run) -> None:
    out = run.result.stdout
    assert "offline model: deterministic static analysis, not an LLM" in out
    assert f"findings: {len(PLANTED)} (3 critical, 3 high, 12 medium, 6 low)" in out
    assert "files reviewed: 8 in 9 tasks by 3 members" in out
    assert f"report written to {run.root / 'review.md'}" in out
    assert "message reviewer → security-scanner" in out  # messages flow between members
    assert "offline-review (deterministic, no LLM)" in run.report


def test_sessions_list_shows_the_lead_and_member_sessions(run: Run) -> None:
    listed = cli(run.root, "sessions", "list", "--json", "--store", run.store)
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    agents = {r["agent_id"]: r for r in rows}
    assert set(agents) == {"lead", *FINDER.values()}
    assert agents["lead"]["session_id"].startswith("review-") and agents["lead"]["messages"] > 5


def test_nothing_is_written_into_the_reviewed_directory(run: Run) -> None:
    copied = sorted(
        p.relative_to(run.root / "sample_project") for p in (run.root / "sample_project").rglob("*")
    )
    original = sorted(
        p.relative_to(SAMPLE) for p in SAMPLE.rglob("*") if "__pycache__" not in p.parts
    )
    assert copied == original


def analyses(root: Path) -> Counter[str]:
    """How many times each file was analysed (the analysis cache's log, in the private HOME)."""
    log = root / "home" / ".cache" / "agentscope_teams" / "review" / "analyses.jsonl"
    return Counter(p for line in log.read_text().splitlines() for p in json.loads(line)["paths"])


def test_three_members_share_one_analysis_per_file(run: Run) -> None:
    assert analyses(run.root) == Counter({f"app/{n}": 1 for n in SAMPLE_FILES})


def test_members_in_worker_processes_give_the_same_report(tmp_path: Path, run: Run) -> None:
    with_workers = review(tmp_path, "--workers", "2")
    assert findings(with_workers.report) == findings(run.report)
    assert "files reviewed: 8 in 9 tasks by 3 members" in with_workers.result.stdout
    assert analyses(tmp_path) == Counter({f"app/{n}": 1 for n in SAMPLE_FILES})
    # the members ran in the workers; their tokens come from their sessions into the table
    out = with_workers.result.stdout
    rows = out[out.index("tokens used (as reported by the model):") :].splitlines()[1:]
    used = {row.split()[0]: int(row.split()[1].replace(",", "")) for row in rows if row.strip()}
    assert set(used) == {"lead", "reviewer", "security-scanner", "perf-tester", "total"}
    assert all(n > 0 for n in used.values())
    assert used["total"] == sum(n for name, n in used.items() if name != "total")
