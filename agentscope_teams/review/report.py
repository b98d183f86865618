"""``render_markdown``: the lead's review.md from the findings each member reported.

:func:`board_findings` reads those findings from the task board: the ``result_data`` each member
completed its review task with (:class:`~.findings.ReviewResult`), never the text of a result. The
offline lead's report and the CLI's counts both come from it.

One bullet per finding: ``- `file:line` — message (RULE, confidence C) — fix: advice — found by
MEMBER``; a finding without advice (a model's own line) gets the rulebook's advice for its rule
when the rule is one the engines report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..teams.rules.models import TaskStatus
from .findings import Finding, Severity, review_result
from .rulebook import known_category, rule_for


class BoardTask(Protocol):
    """What :func:`board_findings` reads of a task (a board ``Task`` or a tool's ``TaskBrief``)."""

    @property
    def id(self) -> str: ...
    @property
    def status(self) -> TaskStatus: ...
    @property
    def owner(self) -> str | None: ...
    @property
    def assignee(self) -> str | None: ...
    @property
    def result_data(self) -> Any: ...


@dataclass
class BoardFindings:
    """The findings of a review's tasks: per member, the files reviewed, and the tasks that
    gave none (``- `id` (member): why`` lines)."""

    by_member: dict[str, list[Finding]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    not_reviewed: list[str] = field(default_factory=list)
    tasks: int = 0

    def counts(self) -> dict[str, int]:
        """Findings per severity value, each problem once (as the report lists them)."""
        return {s.value: n for s, n in severity_counts(merged(self.by_member)).items()}


def board_findings(tasks: Iterable[BoardTask], members: Sequence[str] = ()) -> BoardFindings:
    """The findings data of completed tasks, credited to the owner; a task not completed, or
    completed without findings data, is listed in ``not_reviewed``."""
    out = BoardFindings(by_member={m: [] for m in members})
    for task in tasks:
        out.tasks += 1
        owner = task.owner or task.assignee or "unknown"
        if task.status is not TaskStatus.COMPLETED:
            out.not_reviewed.append(f"- `{task.id}` ({owner}): {task.status.value}")
            continue
        data = review_result(task.result_data)
        if data is None:
            out.not_reviewed.append(f"- `{task.id}` ({owner}): completed without findings data")
            continue
        found = out.by_member.setdefault(owner, [])
        found += [
            f.model_copy(update={"category": known_category(f.rule) or f.category})
            for f in data.findings
        ]
        out.files += [p for p in data.files if p not in out.files]
    return out


def merged(
    findings_by_member: Mapping[str, Sequence[Finding]],
) -> list[tuple[Finding, list[str]]]:
    """Each problem once with every member that reported it, most severe first."""
    by_key: dict[tuple[str, int, str], tuple[Finding, list[str]]] = {}
    for member, findings in findings_by_member.items():
        for f in findings:
            key = (f.file, f.line, f.rule if known_category(f.rule) else f.message)
            entry = by_key.setdefault(key, (f, []))
            if member not in entry[1]:
                entry[1].append(member)
    return sorted(by_key.values(), key=lambda e: (e[0].severity.rank, e[0].sort_key))


def severity_counts(entries: Sequence[tuple[Finding, list[str]]]) -> dict[Severity, int]:
    """How many of the :func:`merged` ``entries`` have each severity (every severity present)."""
    return {s: sum(1 for f, _ in entries if f.severity is s) for s in Severity}


@dataclass(frozen=True)
class Changes:
    """The lines changed since a git ref (``review --changed-since``), per reviewed file."""

    ref: str
    lines: Mapping[str, Sequence[tuple[int, int]]]

    def touch(self, f: Finding) -> bool:
        """Whether ``f`` is on a changed line."""
        return any(first <= f.line <= last for first, last in self.lines.get(f.file, ()))


def render_markdown(
    findings_by_member: Mapping[str, Sequence[Finding]],
    target: str,
    model_label: str,
    clean_files: Iterable[str] | None = None,
    changes: Changes | None = None,
    notice: str | None = None,
) -> str:
    """review.md: title, target, model, counts by severity, then findings grouped by severity.

    A finding reported by several members appears once, crediting all of them. With ``changes``,
    the findings on changed lines come first in each group and the others say they are not.
    A ``notice`` (Markdown) goes right under the title.
    """
    entries = merged(findings_by_member)
    if changes is not None:  # stable: severity order kept, changed lines first within it
        entries.sort(key=lambda e: (e[0].severity.rank, not changes.touch(e[0])))
    counts = severity_counts(entries)

    lines = [
        f"# Code review: {target}",
        *(["", f"> {notice}"] if notice else []),
        "",
        f"- **Target:** `{target}`",
        f"- **Model:** {model_label}",
        f"- **Reviewers:** {', '.join(findings_by_member) or 'none'}",
        "",
        "## Summary",
        "",
        "| Severity | Findings |",
        "| --- | ---: |",
        *(f"| {s.value} | {counts[s]} |" for s in Severity),
        f"| **total** | **{len(entries)}** |",
    ]
    if not entries:
        lines += ["", "No findings."]
    elif changes is not None:
        touched = sum(1 for f, _ in entries if changes.touch(f))
        lines += [
            "",
            f"{touched} of the {len(entries)} findings are on lines changed since {changes.ref}; "
            "the others are on unchanged lines of the changed files.",
        ]
    for severity in Severity:
        group = [e for e in entries if e[0].severity is severity]
        if not group:
            continue
        lines += ["", f"## {severity.value.capitalize()} ({len(group)})", ""]
        for f, members in group:
            mark = ""
            if changes is not None and not changes.touch(f):
                mark = f" — on a line unchanged since {changes.ref}"
            lines.append(_bullet(f, members) + mark)
    return "\n".join(lines + _clean_section(clean_files)) + "\n"


def _clean_section(clean_files: Iterable[str] | None) -> list[str]:
    """The lines listing the files without findings (none when there are none)."""
    clean = sorted(set(clean_files or ()))
    if not clean:
        return []
    return ["", "## Clean files", "", "No findings in " + ", ".join(f"`{c}`" for c in clean) + "."]


def _bullet(f: Finding, members: list[str]) -> str:
    message = " ".join(f.message.split())
    advice = f.advice or (rule_for(f.rule).advice if known_category(f.rule) else "")
    fix = f" — fix: {advice}" if advice else ""
    where = f"`{f.file}:{f.line}`"
    return (
        f"- {where} — {message} ({f.rule}, confidence {f.confidence.value}){fix} "
        f"— found by {', '.join(members)}"
    )


def review_report(
    board: BoardFindings,
    target: str,
    model_label: str,
    *,
    files: Sequence[str],
    members: Sequence[str],
    changes: Changes | None = None,
    stopped: str | None = None,
) -> str:
    """The whole review.md from the board's findings data: :func:`render_markdown` (the files of
    ``files`` nobody flagged are the clean ones), then the scope and the tasks not reviewed.
    ``stopped`` (why the review stopped before it finished: a spent budget) heads it."""
    by_member = {m: board.by_member.get(m, []) for m in members} | board.by_member
    flagged = {f.file for fs in by_member.values() for f in fs}
    clean = [f for f in files if f not in flagged]
    notice = None
    if stopped is not None:
        notice = (
            f"**The review {stopped}.** It lists the findings of the tasks completed before "
            "it stopped; the tasks left are under “Not fully reviewed”."
        )
    text = render_markdown(
        by_member, target, model_label, clean_files=clean, changes=changes, notice=notice
    )
    text += (
        f"\n## Scope\n\n{len(files)} Python files reviewed in {board.tasks} tasks by "
        f"{len(members)} team members ({', '.join(members)}).\n"
    )
    if board.not_reviewed:
        text += "\n## Not fully reviewed\n\n" + "\n".join(board.not_reviewed) + "\n"
    return text
