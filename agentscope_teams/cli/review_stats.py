"""The numbers of a finished review, read from the task board (what the members reported)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..context import RuntimeContext
from ..review import CATEGORY_OF_SPEC, Finding, Severity, parse_finding_lines
from ..review.rulebook import known_category
from ..review.transcript import files_in_text
from ..teams import Task, TaskStatus
from .review_view import ReviewSummary

if TYPE_CHECKING:
    from .review_run import ReviewConfig

_SEVERITY_HEADING = re.compile(r"^#{2,3}\s+(critical|high|medium|low)\b", re.IGNORECASE)
_BULLET = re.compile(r"^\s*[-*] ")


def board_findings(tasks: Sequence[Task]) -> list[Finding]:
    """The findings in the results of completed tasks, each problem once."""
    seen: dict[tuple[str, int, str], Finding] = {}
    for task in tasks:
        if task.status is not TaskStatus.COMPLETED or not task.result:
            continue
        category = CATEGORY_OF_SPEC.get(task.owner or "", "quality")
        for f in parse_finding_lines(task.result, category):
            seen.setdefault((f.file, f.line, f.rule), f)
    return [
        f.model_copy(update={"category": known_category(f.rule) or f.category})
        for f in seen.values()
    ]


def report_counts(report: str) -> dict[str, int] | None:
    """Findings per severity in a report with ``## High (N)``-style sections (bullets counted);
    None when the report has no such sections."""
    counts = {s.value: 0 for s in Severity}
    current: str | None = None
    seen = False
    for line in report.splitlines():
        heading = _SEVERITY_HEADING.match(line)
        if heading is not None:
            current, seen = heading[1].lower(), True
        elif line.startswith("#"):
            current = None
        elif current is not None and _BULLET.match(line):
            counts[current] += 1
    return counts if seen else None


def summarize(
    cfg: ReviewConfig,
    tasks: Sequence[Task],
    report: str,
    seconds: float,
    *,
    team_id: str | None,
    session: RuntimeContext,
) -> ReviewSummary:
    """The numbers of the run: finding counts from the report (else from the board)."""
    findings = board_findings(tasks)
    counts = report_counts(report) or {
        s.value: sum(1 for f in findings if f.severity is s) for s in Severity
    }
    files = {f for t in tasks for f in files_in_text(t.description)}
    members = sorted({m for t in tasks if (m := t.owner or t.assignee)})
    unfinished = [
        f"{t.id} ({t.status.value})" for t in tasks if t.status is not TaskStatus.COMPLETED
    ]
    return ReviewSummary(
        target=cfg.target,
        model=cfg.model.model_name,
        offline=cfg.offline,
        output=cfg.output.resolve(),
        seconds=seconds,
        files=len(files),
        tasks=len(tasks),
        members=members,
        counts=counts,
        unfinished=unfinished,
        team_id=team_id,
        session_id=session.session_id,
    )
