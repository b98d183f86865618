"""The member side of the offline review team: claim, read, analyze, tell teammates, complete.

:func:`member_step` decides one step of a member from its system prompt and the tool calls of the
current turn (with their results): claim a task, read the files it names (one ``read_file`` call per
file, more with ``offset`` while a file is cut off), analyze the rebuilt sources with the rules of
its own area, forward findings of other areas to the teammate responsible (a message for people and
models to read), complete the task with its findings as ``data`` (a :class:`~.findings.ReviewResult`,
the task's result schema; the ``result`` text is a short summary nobody parses), and claim again
until nothing is claimable.

The analysis itself is not done here: when a task's files are read, :func:`member_step` answers
:class:`NeedsAnalysis` with their sources, and the model calls it again with the findings (from the
shared :class:`~.cache.AnalysisCache`: each file analysed once for all members).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..teams.results import BoardListing, TaskClaimed
from ..teams.rules.models import TaskStatus
from .findings import (
    CATEGORY_OF_SPEC,
    Category,
    Finding,
    ReviewResult,
    review_result,
    sort_findings,
)
from .transcript import (
    Call,
    Step,
    describe_group,
    files_in_text,
    fit_lines,
    rebuild_source,
    short_message,
)

SPEC_OF_CATEGORY: dict[Category, str] = {c: s for s, c in CATEGORY_OF_SPEC.items()}
AREA: dict[Category, str] = {
    "security": "security",
    "performance": "performance",
    "quality": "correctness and maintainability",
}
_ROLE_LINE = re.compile(r"You are the (general code|security|performance) reviewer", re.IGNORECASE)
_ROLE_WORD: dict[str, str] = {
    "general code": "reviewer",
    "security": "security-scanner",
    "performance": "perf-tester",
}
_NAME_HINT = re.compile(
    r"(?:your name is|you are (?:the )?member|member name:?)\s*[`'\"]?([A-Za-z0-9_.-]+)", re.I
)
_LEAD_HINT = re.compile(r"led by [`'\"]?([A-Za-z0-9_.-]+)")
MAX_FORWARDED_LINES = 8


@dataclass(frozen=True)
class NeedsAnalysis:
    """The member has read its task's files: ``sources`` (path -> text) need analysing first."""

    sources: dict[str, str]


Analyses = Mapping[str, Sequence[Finding]]


@dataclass(frozen=True)
class Role:
    """Who a member is: its name in the team and the spec (area) it reviews for."""

    name: str
    spec: str | None
    lead: str = "lead"

    @property
    def category(self) -> Category | None:
        return CATEGORY_OF_SPEC.get(self.spec or "")


def member_role(system_prompt: str) -> Role:
    """The role from the spec's system prompt ("You are the security reviewer ...").

    The member name is the spec name unless the prompt names the member ("your name is X").
    """
    spec = None
    m = _ROLE_LINE.search(system_prompt)
    if m is not None:
        spec = _ROLE_WORD[m[1].lower()]
    else:
        named = [s for s in CATEGORY_OF_SPEC if re.search(rf"\b{re.escape(s)}\b", system_prompt)]
        spec = named[0] if len(named) == 1 else None
    hint = _NAME_HINT.search(system_prompt)
    name = hint[1] if hint is not None else (spec or "member")
    if spec is None and name in CATEGORY_OF_SPEC:
        spec = name
    lead = _LEAD_HINT.search(system_prompt)
    return Role(name=name, spec=spec, lead=lead[1] if lead else "lead")


@dataclass
class _Task:
    id: str
    files: list[str]
    claim_index: int


@dataclass
class _Turn:
    """What the calls of this turn tell: the open task, what was finished, the last claim."""

    current: _Task | None = None
    finished: list[str] = field(default_factory=list)
    reported: list[Finding] = field(default_factory=list)
    sent: int = 0
    claims: int = 0
    last_claim_empty: bool = False
    files_done: int = 0


def _scan(calls: Sequence[Call]) -> _Turn:
    turn = _Turn()
    for i, call in enumerate(calls):
        if call.interrupted:
            continue  # it never ran: as if it had not been called
        if call.name == "claimTask" and call.output is not None:
            turn.claims += 1
            claimed = call.result(TaskClaimed)
            task = claimed.task if claimed is not None else None
            turn.last_claim_empty = task is None
            if claimed is not None and task is not None:
                turn.current = _Task(task.id, files_in_text(claimed.description), i)
        elif call.name in ("completeTask", "failTask") and call.output is not None:
            _reported(turn, call)
        elif call.name == "sendMessage" and call.ok:
            turn.sent += 1
    return turn


def _reported(turn: _Turn, call: Call) -> None:
    """A completeTask / failTask call: the current task is over (even when the call failed)."""
    task = turn.current
    if task is None or call.arg("task_id") != task.id:
        return
    turn.current = None
    if not call.ok:
        return
    turn.finished.append(task.id)
    turn.files_done += len(task.files)
    data = review_result(call.input.get("data")) if call.name == "completeTask" else None
    if data is not None:
        turn.reported += data.findings


def member_step(
    role: Role,
    owned: Sequence[str],
    calls: Sequence[Call],
    inbox: Sequence[str],
    *,
    can_act: bool = True,
    analyses: Analyses | None = None,
) -> Step | NeedsAnalysis:
    """The next step of a member; ``owned``: the tasks its wake-up message says it owns,
    ``inbox``: teammates' messages injected since, ``analyses``: findings per path, when the model has them."""
    turn = _scan(calls)
    if not can_act:
        return Step(_summary(turn, inbox))
    task = turn.current
    if task is None:
        return _claim(role, owned, calls, turn) or Step(_summary(turn, inbox))
    reads, unreadable = _reads(task, calls)
    if reads:
        label = "file" if len(reads) == 1 else "files"
        return Step(f"Reading {len(reads)} {label} of task {task.id}.", tuple(reads))
    sources = {p: _source(task, calls, p) for p in task.files if p not in unreadable}
    if analyses is None or any(p not in analyses for p in sources):
        return NeedsAnalysis(sources)
    return _finish(role, task, [f for p in sources for f in analyses[p]], unreadable)


def _claim(role: Role, owned: Sequence[str], calls: Sequence[Call], turn: _Turn) -> Step | None:
    """The next claim: a task this member owns (from the wake-up prompt or the board), else the
    next claimable one; when nothing was claimable, one look at the board for tasks it owns."""
    tried = {c.arg("task_id") for c in calls if c.name == "claimTask"}
    owned = [t for t in [*owned, *_owned_on_board(role, calls)] if t not in tried]
    if owned:
        args: dict[str, object] = {"task_id": owned[0]}
        return Step(f"Taking up my task {owned[0]} again.", (("claimTask", args),))
    if turn.claims == 0 or not turn.last_claim_empty:
        return Step("Claiming the next task from the board.", (("claimTask", {}),))
    last_claim = max(i for i, c in enumerate(calls) if c.name == "claimTask")
    if not any(c.name == "listTasks" for c in calls[last_claim:]):
        look: dict[str, object] = {"status": "in_progress"}
        return Step(
            "Nothing claimable; checking the board for tasks I hold.", (("listTasks", look),)
        )
    return None


def _owned_on_board(role: Role, calls: Sequence[Call]) -> list[str]:
    boards = [b for c in calls if c.name == "listTasks" and (b := c.result(BoardListing))]
    if not boards:
        return []
    held = (t for t in boards[-1].tasks if t.status is TaskStatus.IN_PROGRESS)
    return [t.id for t in held if t.owner == role.name]


def _reads(
    task: _Task, calls: Sequence[Call]
) -> tuple[list[tuple[str, dict[str, object]]], dict[str, str]]:
    """The ``read_file`` calls still needed for ``task``, and the files that could not be read."""
    needed: list[tuple[str, dict[str, object]]] = []
    unreadable: dict[str, str] = {}
    for path in task.files:
        mine = [
            c
            for c in calls[task.claim_index :]
            if c.name == "read_file" and c.arg("path") == path and not c.interrupted
        ]
        chunks = [c.output for c in mine if c.ok and c.output is not None]
        errors = [c.output for c in mine if c.is_error and c.output is not None]
        if errors and not chunks:
            unreadable[path] = errors[-1]
        elif not chunks:
            needed.append(("read_file", {"path": path}))
        else:
            offset = rebuild_source(chunks).next_offset
            asked = {c.input.get("offset") for c in mine}
            if offset is not None and offset not in asked:
                needed.append(("read_file", {"path": path, "offset": offset}))
    return needed, unreadable


def _source(task: _Task, calls: Sequence[Call], path: str) -> str:
    mine = calls[task.claim_index :]
    return rebuild_source(
        c.output
        for c in mine
        if c.name == "read_file" and c.arg("path") == path and c.ok and c.output
    ).source


def _finish(role: Role, task: _Task, found: list[Finding], unreadable: dict[str, str]) -> Step:
    found = sort_findings(found)
    mine = [f for f in found if role.category is None or f.category == role.category]
    steps: list[tuple[str, dict[str, object]]] = []
    for category, spec in SPEC_OF_CATEGORY.items():
        if role.category in (None, category) or spec == role.name:
            continue  # without an area of its own a member reports everything itself
        theirs = [f for f in found if f.category == category]
        if theirs:
            steps.append(("sendMessage", {"to": spec, "content": _forward(role, task, theirs)}))
    told = len(steps)
    data = ReviewResult(files=[p for p in task.files if p not in unreadable], findings=mine)
    result = _result(role, task, mine, unreadable)
    steps.append(
        (
            "completeTask",
            {"task_id": task.id, "result": result, "data": data.model_dump(mode="json")},
        )
    )
    steps.append(("claimTask", {}))
    note = f"; telling {told} teammate(s) what I noticed in their area" if told else ""
    text = f"Task {task.id}: {len(mine)} finding(s) in {len(task.files)} file(s){note}."
    return Step(text, tuple(steps))


def _result(role: Role, task: _Task, mine: list[Finding], unreadable: dict[str, str]) -> str:
    """The task's result text, for people: a summary line, then the findings as lines (short
    ones if the full ones are too long; the data has them all) and the files not read."""
    area = AREA[role.category] if role.category else "any"
    checked = describe_group(task.files) if task.files else "no files (the task names none)"
    head = f"{len(mine) or 'no'} finding(s): checked {checked} for {area} problems"
    short = [
        f.model_copy(update={"message": short_message(f.message)}).to_line(short=True) for f in mine
    ]
    lines, rest = fit_lines([f.to_line() for f in mine], short)
    if rest:
        lines.append(f"... and {len(rest)} more in the data")
    lines += [f"could not read {p}: {err}" for p, err in unreadable.items()]
    return "\n".join([head, *lines])


def _forward(role: Role, task: _Task, findings: list[Finding]) -> str:
    lines = [f.to_line() for f in findings[:MAX_FORWARDED_LINES]]
    more = len(findings) - MAX_FORWARDED_LINES
    if more > 0:
        lines.append(f"... and {more} more in the same files")
    head = f"While reviewing task {task.id} ({role.spec or role.name}) I noticed, in your area:"
    return "\n".join([head, *lines])


def _summary(turn: _Turn, inbox: Sequence[str]) -> str:
    if not turn.finished:
        text = "No claimable task left for me; nothing more to do."
    else:
        text = (
            f"Done: completed {', '.join(turn.finished)} ({turn.files_done} file(s) reviewed, "
            f"{len(turn.reported)} finding(s) reported)."
        )
    if turn.sent:
        text += f" Sent {turn.sent} message(s) to teammates."
    if inbox:
        text += f" Read {len(inbox)} message(s) from teammates."
    return text
