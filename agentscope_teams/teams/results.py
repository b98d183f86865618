"""What the team tools return: typed results, each rendered once into the text a model reads.

Code that needs a result (the review transcript, the CLI) reads these models from
``ToolResultBlock.data`` with :func:`~agentscope_teams.tools.output_of`, never the text.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Literal

from pydantic import Field

from ..tools import ToolOutput
from .rules.eligibility import never_starts
from .rules.models import Task, TaskStatus

#: Longest task result or error shown in full by waitForTeam (a member's whole report must fit).
MAX_TEXT = 8000


def clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


class TaskBrief(ToolOutput):
    """A task as tools show it: no history, no lease bookkeeping."""

    id: str
    title: str
    status: TaskStatus
    owner: str | None = None
    assignee: str | None = None
    blocked_by: list[str] = Field(default_factory=list)
    blocked_reason: str | None = None
    result: str | None = None
    #: The task's declared result schema and the structured result it was completed with.
    result_schema: dict[str, Any] | None = None
    result_data: Any = None
    error: str | None = None

    @classmethod
    def of(cls, task: Task) -> TaskBrief:
        return cls(
            id=task.id,
            title=task.title,
            status=task.status,
            owner=task.owner,
            assignee=task.assignee,
            blocked_by=list(task.blocked_by),
            blocked_reason=task.blocked_reason,
            result=task.result,
            result_schema=task.result_schema,
            result_data=task.result_data,
            error=task.error,
        )

    @property
    def stuck(self) -> bool:
        """Pending but never able to start: a blocker failed, was cancelled or deleted."""
        return never_starts(self.status, self.blocked_reason)

    def line(self, *, full: bool = False) -> str:
        """One task: id, status, title, owner or assignee, and its result, error or blocker."""
        parts = [f"{self.id} [{self.status.value}] {self.title!r}"]
        if self.owner:
            parts.append(f"owner={self.owner}")
        elif self.assignee:
            parts.append(f"assigned to {self.assignee}")
        if self.blocked_reason:
            parts.append(f"({self.blocked_reason})")
        text = " ".join(parts)
        limit = MAX_TEXT if full else 200
        if self.status is TaskStatus.COMPLETED:
            text += f"\n  result: {clip(self.result or '', limit)}"
            if self.result_data is not None:
                text += f"\n  data: {clip(json.dumps(self.result_data, ensure_ascii=False), limit)}"
        elif self.error:
            text += f"\n  error: {clip(self.error, limit)}"
        return text

    def render(self) -> str:
        return self.line(full=True)


def _board(tasks: list[TaskBrief], *, full: bool) -> str:
    if not tasks:
        return "The board has no tasks."
    return "\n".join(t.line(full=full) for t in tasks)


class BoardListing(ToolOutput):
    """listTasks: the tasks (of one status, or all)."""

    tasks: list[TaskBrief]
    #: For the lead: what members wait for or were refused (:func:`.member.review.member_notes`).
    members: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, tasks: list[Task], members: list[str] | None = None) -> BoardListing:
        return cls(tasks=[TaskBrief.of(t) for t in tasks], members=members or [])

    def render(self) -> str:
        board = _board(self.tasks, full=False)
        if not self.members:
            return board
        return board + "\nMembers:\n" + "\n".join(f"- {line}" for line in self.members)


class TeamWaited(ToolOutput):
    """waitForTeam: every task when the wait ended; ``done`` unless the timeout passed first."""

    done: bool
    seconds: float
    tasks: list[TaskBrief]
    #: The work is finished (none pending or in progress, one completed): the team ends with the
    #: lead's reply unless more tasks are assigned first.
    ends: bool = False
    #: Why the wait ended before the work did: no open task can progress (a budget every member
    #: draws on is spent).
    stopped: str | None = None

    def render(self) -> str:
        counts = Counter(t.status.value for t in self.tasks)
        tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no tasks"
        if self.done:
            blocked = sum(t.stuck for t in self.tasks)
            note = f"; {blocked} can never start (a blocker failed)" if blocked else ""
            head = f"All {len(self.tasks)} tasks are finished ({tally}){note}."
        elif self.stopped is not None:
            still = sum(not (t.status.finished or t.stuck) for t in self.tasks)
            head = (
                f"Stopped waiting: {self.stopped}. {still} of {len(self.tasks)} tasks are still "
                f"open ({tally}) and no member can work on them; waiting again will not help."
            )
        else:
            still = sum(not (t.status.finished or t.stuck) for t in self.tasks)
            head = (
                f"Timed out after {self.seconds:g}s with {still} of {len(self.tasks)} tasks "
                f"still open ({tally}); call waitForTeam again to keep waiting."
            )
        if self.ends:
            head += (
                " The team ends (completed, its members stopped) when your reply ends; assign "
                "more tasks before then to keep it working, or call endTeam now."
            )
        return head + "\n" + _board(self.tasks, full=True)


class TeamCreated(ToolOutput):
    """createTeam: the new team, now the lead's current team."""

    team_id: str
    name: str
    lead: str
    specs: list[str]

    def render(self) -> str:
        return (
            f"Created team {self.team_id} ({self.name!r}); you lead it as {self.lead!r} and it is "
            f"now your current team. Add members with spawnMember (specs: "
            f"{', '.join(self.specs) or 'none'})."
        )


class MemberSpawned(ToolOutput):
    """spawnMember: the member and where it runs."""

    team_id: str
    member: str
    spec: str
    runs_in: Literal["workers", "local"]

    def render(self) -> str:
        where = "a worker process" if self.runs_in == "workers" else "this process"
        return (
            f"Spawned member {self.member!r} (spec {self.spec}) in team {self.team_id}; it runs "
            f"in {where} and works on claimable tasks and messages. Assign work with assignTask."
        )


class TeamDeleted(ToolOutput):
    team_id: str

    def render(self) -> str:
        return f"Team {self.team_id} deleted; its members were stopped."


class TeamEnded(ToolOutput):
    """endTeam: the team is completed (or had ended already)."""

    team_id: str
    status: str
    already: bool = False
    #: The tasks still pending or in progress when it ended (they stay on the board as they were).
    unfinished: list[TaskBrief] = Field(default_factory=list)

    def render(self) -> str:
        if self.already:
            return f"Team {self.team_id} had already ended ({self.status}); nothing changed."
        text = (
            f"Team {self.team_id} ended ({self.status}): its members were stopped; its board and "
            "messages are kept. createTeam starts a new team for new work."
        )
        if not self.unfinished:
            return text
        count = len(self.unfinished)
        head = "1 task was" if count == 1 else f"{count} tasks were"
        tasks = "; ".join(_unfinished(t) for t in self.unfinished)
        return f"{text} {head} not finished and stay as they were: {tasks}."


def _unfinished(task: TaskBrief) -> str:
    """``task`` as endTeam names a task it left unfinished."""
    status = task.status.value.replace("_", " ")
    owner = f", owner {task.owner}" if task.owner else ""
    return f"{task.id} {task.title!r} ({status}{owner})"


class TaskAssigned(ToolOutput):
    """assignTask: the created task."""

    task: TaskBrief

    def render(self) -> str:
        who = (
            f"assigned to {self.task.assignee}" if self.task.assignee else "claimable by any member"
        )
        blocked = f", blocked by {', '.join(self.task.blocked_by)}" if self.task.blocked_by else ""
        return f"Created task {self.task.id} ({who}{blocked})."


class TaskClaimed(ToolOutput):
    """claimTask: the claimed task (``task`` None: nothing claimable, ``open_count`` tasks open)."""

    member: str
    task: TaskBrief | None = None
    description: str = ""
    open_count: int = 0

    def render(self) -> str:
        if self.task is None:
            return (
                f"No task is claimable by {self.member} right now ({self.open_count} open tasks "
                "are taken, blocked or assigned to others). Check your messages or stop."
            )
        text = f"Claimed task {self.task.id}: {self.task.title}"
        if self.description:
            text += f"\n\n{self.description}"
        if self.task.result_schema is None:
            report = f"completeTask(task_id={self.task.id!r}, result=...)"
            return text + f"\n\nReport with {report} or failTask."
        schema = json.dumps(self.task.result_schema, ensure_ascii=False)
        report = f"completeTask(task_id={self.task.id!r}, result=<a summary>, data=<JSON>)"
        return (
            text + f"\n\nReport with {report}, where data matches this JSON schema:\n{schema}\n"
            "or with failTask."
        )


class TaskReported(ToolOutput):
    """completeTask / failTask."""

    task_id: str
    status: Literal["completed", "failed"]
    #: Why a completion ended as a failure (see :func:`~.rules.transitions.schema_refused`).
    note: str = ""

    def render(self) -> str:
        done = "completed" if self.status == "completed" else "marked failed"
        return f"Task {self.task_id} {done}." + (f" {self.note}" if self.note else "")


class MessageSent(ToolOutput):
    to: str
    seq: int

    def render(self) -> str:
        return f"Message #{self.seq} sent to {self.to}."


class BroadcastSent(ToolOutput):
    """broadcastMessage: who received it (``by_lead``: sent by the lead, for the empty case)."""

    recipients: list[str]
    by_lead: bool

    def render(self) -> str:
        nobody = "the team has no members yet" if self.by_lead else "no other members"
        names = ", ".join(self.recipients) or f"nobody ({nobody})"
        return f"Broadcast sent to {names}."
