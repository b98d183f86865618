"""The lead side of the offline review team: find the files, build the team, share out, report.

:func:`lead_step` decides one step of the lead from the tool calls of the current turn: list the
Python files (``glob_files``), ``createTeam``, ``spawnMember`` for each reviewer spec, one
``assignTask`` per member per group of files (each with the findings schema
:data:`~.findings.RESULT_SCHEMA`), ``waitForTeam`` until no task is open, then the final answer:
the review report, rendered with :func:`~.report.render_markdown` from the findings data the tasks
were completed with (:func:`~.report.board_findings`), crediting each finding to the member that
owned the task. The lead reads no member's text. The members it may spawn are the reviewer
specs shipped in ``review/specs/`` (:func:`shipped_roster`), read with the spec loader.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from ..subagents.spec import load_specs
from ..teams.results import BoardListing, TaskBrief, TeamWaited
from ..teams.rules.models import TaskStatus
from .findings import CATEGORY_OF_SPEC, RESULT_SCHEMA, Category
from .offline_files import ChangeScope, discover, discover_changed
from .report import board_findings, render_markdown, review_report
from .transcript import (
    Call,
    Step,
    describe_group,
    split_files,
)

#: The reviewer specs shipped with the package (the default of ``agentscope-teams review --specs``).
SPECS_DIR = Path(__file__).resolve().parent / "specs"
TEAM_NAME = "code-review"
WAIT_SECONDS = 30
MAX_WAITS = 40
NUDGE = "Tasks {tasks} are still waiting for you on the board: claim them with claimTask."
AREA_TITLE: dict[Category, str] = {
    "quality": "Code review",
    "security": "Security review",
    "performance": "Performance review",
}
_TARGET = re.compile(r"^\s*target:\s*`?(?P<t>[^`\n]+?)`?\s*$", re.IGNORECASE | re.MULTILINE)
_OPEN = ("pending", "in_progress")
_LISTED = re.compile(r"^- ([A-Za-z0-9_.-]+): ", re.MULTILINE)

Plan = tuple[tuple[str, dict[str, object]], ...]


@cache
def shipped_roster() -> tuple[str, ...]:
    """The names of the specs in :data:`SPECS_DIR`, in file-name order."""
    return tuple(load_specs(SPECS_DIR).specs)


def roster(system_prompt: str) -> list[str]:
    """The reviewer specs the lead may spawn: those of :func:`shipped_roster` listed as
    ``- name: description`` in its prompt (the team extension lists the available specs so), else
    those it mentions, else all."""
    shipped = shipped_roster()
    listed = set(_LISTED.findall(system_prompt))
    return (
        [n for n in shipped if n in listed]
        or [n for n in shipped if n in system_prompt]
        or list(shipped)
    )


def target_of(instruction: str) -> str:
    """The reviewed target from the user's instruction (a ``Target: X`` line), else ``"."``."""
    m = _TARGET.search(instruction)
    return m["t"].strip() if m else "."


def _ok(calls: Sequence[Call], name: str) -> list[Call]:
    return [c for c in calls if c.name == name and c.ok]


def _tried(calls: Sequence[Call], name: str) -> list[Call]:
    """Calls that ran to a result; one cut short (its process stopped) counts as never made."""
    return [c for c in calls if c.name == name and c.output is not None and not c.interrupted]


def lead_step(
    system_prompt: str,
    instruction: str,
    calls: Sequence[Call],
    *,
    model_label: str,
    can_act: bool = True,
) -> Step:
    """The lead's next step; ``instruction``: the user message that started the turn. Team
    messages do not change it: the findings come as task data."""
    target = target_of(instruction)
    changes = ChangeScope.of(instruction)
    files, listing, error = discover_changed(changes, calls) if changes else discover(calls)
    if error is not None:
        return Step(f"I could not list the files of {target}: {error}; nothing was reviewed.")
    if listing and not can_act:
        return Step(
            f"I ran out of steps while listing the files of {target}; nothing was reviewed."
        )
    if listing:
        return Step("Listing the Python files to review.", tuple(listing))
    if not files:
        none = (
            f"No Python file changed since {changes.since}."
            if changes
            else "No Python files found."
        )
        return Step(render_markdown({}, target, model_label) + f"\n{none}\n")
    plan = _team_plan(system_prompt, target, files, calls) if can_act else None
    if plan is not None:
        return plan
    return Step(_report(target, files, calls, model_label))


def _team_plan(
    system_prompt: str, target: str, files: list[str], calls: Sequence[Call]
) -> Step | None:
    """The next team-building or waiting step; None when it is time to write the report."""
    if not _ok(calls, "createTeam"):
        if _tried(calls, "createTeam"):
            return Step(f"The team could not be created: {_tried(calls, 'createTeam')[-1].output}")
        args: dict[str, object] = {"name": TEAM_NAME, "description": f"Code review of {target}"}
        return Step(
            f"Creating the review team for {len(files)} Python files.", (("createTeam", args),)
        )
    tried = {c.arg("name") for c in _tried(calls, "spawnMember")}
    missing: Plan = tuple(
        ("spawnMember", {"name": n, "spec": n}) for n in roster(system_prompt) if n not in tried
    )
    if missing:
        return Step(f"Spawning {len(missing)} reviewers.", missing)
    members = [c.arg("name") for c in _ok(calls, "spawnMember")]
    if not members:
        return Step("No reviewer could be spawned; nothing was reviewed.")
    assigning = _assigning(files, members, calls)
    if assigning is not None:
        return assigning
    waits = _tried(calls, "waitForTeam")
    wait: Plan = (("waitForTeam", {"timeout_seconds": WAIT_SECONDS}),)
    if not waits:
        return Step("Waiting for the team to finish.", wait)
    if not _open_tasks(waits[-1]) or len(waits) >= MAX_WAITS:
        return None
    nudges: Plan = tuple(
        ("sendMessage", {"to": m, "content": NUDGE.format(tasks=", ".join(ids))})
        for m, ids in _idle_with_work(waits[-1]).items()
    )
    return Step("Some tasks are still open; waiting again.", nudges + wait)


def _assigning(files: list[str], members: list[str], calls: Sequence[Call]) -> Step | None:
    """The assignments still to make: all of them at first; after a stop that cut some short,
    those neither made nor on the board (looked up with ``listTasks`` first); else None."""
    plan = _assignments(files, members)
    tried = _tried(calls, "assignTask")
    cut = [i for i, c in enumerate(calls) if c.name == "assignTask" and c.interrupted]
    if not cut:
        return None if tried else _assign_step(files, plan, plan)
    looked = [c for c in calls[cut[-1] :] if c.name == "listTasks" and c.ok]
    if not looked:  # some may have landed before the process stopped
        look: dict[str, object] = {}
        return Step(
            "Checking the board for tasks assigned before the stop.", (("listTasks", look),)
        )
    board = looked[-1].result(BoardListing)
    assigned = {(c.arg("title"), c.arg("assignee")) for c in tried}
    assigned |= {(t.title, t.assignee or "") for t in (board.tasks if board else [])}
    missing = tuple(a for a in plan if (a[1]["title"], a[1]["assignee"]) not in assigned)
    return _assign_step(files, plan, missing) if missing else None


def _assignments(files: list[str], members: list[str]) -> Plan:
    """One ``assignTask`` per member per group of files."""
    groups = split_files(files)
    plan: list[tuple[str, dict[str, object]]] = []
    for group in groups:
        for member in members:
            category = CATEGORY_OF_SPEC.get(member)
            area = AREA_TITLE[category] if category is not None else "Review"
            description = (
                f"{area} of these files; complete the task with your findings as `data` "
                "(the task's result schema), one entry per finding:\n" + "\n".join(group)
            )
            args: dict[str, object] = {
                "title": f"{area}: {describe_group(group)}",
                "description": description,
                "assignee": member,
                "result_schema": RESULT_SCHEMA,
            }
            plan.append(("assignTask", args))
    return tuple(plan)


def _assign_step(files: list[str], plan: Plan, missing: Plan) -> Step:
    groups = len(split_files(files))
    text = (
        f"Sharing {len(files)} files out as {len(plan)} tasks: {groups} group(s) of files, "
        "one task per reviewer per group."
    )
    if len(missing) < len(plan):
        text = f"Assigning the {len(missing)} of {len(plan)} tasks that were not assigned yet."
    return Step(text, missing)


def _board(wait: Call) -> list[TaskBrief]:
    waited = wait.result(TeamWaited)
    return waited.tasks if waited is not None else []


def _open_tasks(wait: Call) -> bool:
    if not wait.ok:
        return True
    return any(t.status.value in _OPEN for t in _board(wait))


def _idle_with_work(wait: Call) -> dict[str, list[str]]:
    """Members with pending tasks assigned and none in progress (they may have stopped early)."""
    tasks = _board(wait)
    busy = {t.owner for t in tasks if t.status is TaskStatus.IN_PROGRESS}
    waiting: dict[str, list[str]] = {}
    for t in tasks:
        if t.status is TaskStatus.PENDING and t.assignee and t.assignee not in busy:
            waiting.setdefault(t.assignee, []).append(t.id)
    return waiting


def _report(target: str, files: list[str], calls: Sequence[Call], model_label: str) -> str:
    waits = _ok(calls, "waitForTeam")
    views = _board(waits[-1]) if waits else []
    members = [c.arg("name") for c in _ok(calls, "spawnMember")]
    board = board_findings(views, members)
    board.tasks = board.tasks or len(_ok(calls, "assignTask"))
    return review_report(board, target, model_label, files=files, members=members)
