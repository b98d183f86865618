"""Waiting for a team and describing its board as text a model (or a person) reads."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import anyio

from .models import Task, TaskStatus
from .protocol import TeamClient

#: Longest task result or error shown in full by waitForTeam (a member's whole report must fit).
MAX_TEXT = 8000


@dataclass(frozen=True)
class TeamWaitResult:
    """Every task of the team when the wait ended; ``done`` unless the deadline passed first."""

    done: bool
    tasks: list[Task]

    @property
    def open(self) -> list[Task]:
        return [t for t in self.tasks if not settled(t)]


def parse_status(status: str | None) -> TaskStatus | None:
    return None if status is None else TaskStatus(status)


def stuck(task: Task) -> bool:
    """A pending task that can never start: one of its blockers failed, was cancelled or deleted."""
    reason = task.blocked_reason or ""
    return task.status is TaskStatus.PENDING and reason.startswith("blocked by")


def settled(task: Task) -> bool:
    return task.status.finished or stuck(task)


async def wait_for_team(
    client: TeamClient,
    team_id: str,
    timeout: float,  # noqa: ASYNC109 - a deadline that returns a result, not an exception
) -> TeamWaitResult:
    """Poll (with backoff) until every task is completed, failed, cancelled or stuck behind a
    failed blocker, or ``timeout`` seconds passed; returns every task either way."""
    deadline, delay = anyio.current_time() + timeout, 0.05
    while True:
        tasks = await client.list_tasks(team_id)
        if all(settled(t) for t in tasks):
            return TeamWaitResult(True, tasks)
        remaining = deadline - anyio.current_time()
        if remaining <= 0:
            return TeamWaitResult(False, tasks)
        await anyio.sleep(min(delay, remaining))
        delay = min(delay * 1.5, 1.0)


def clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def task_line(task: Task, *, full: bool = False) -> str:
    """One task: id, status, title, owner or assignee, and its result, error or blocker."""
    parts = [f"{task.id} [{task.status.value}] {task.title!r}"]
    if task.owner:
        parts.append(f"owner={task.owner}")
    elif task.assignee:
        parts.append(f"assigned to {task.assignee}")
    if task.blocked_reason:
        parts.append(f"({task.blocked_reason})")
    line = " ".join(parts)
    if task.status is TaskStatus.COMPLETED:
        line += f"\n  result: {clip(task.result or '') if full else clip(task.result or '', 200)}"
    elif task.error:
        line += f"\n  error: {clip(task.error) if full else clip(task.error, 200)}"
    return line


def board_text(tasks: list[Task], *, full: bool = False) -> str:
    if not tasks:
        return "The board has no tasks."
    return "\n".join(task_line(t, full=full) for t in tasks)


def wait_text(result: TeamWaitResult, seconds: float) -> str:
    """The waitForTeam answer: a headline with counts, then every task with its result or error."""
    counts = Counter(t.status.value for t in result.tasks)
    tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no tasks"
    if result.done:
        blocked = sum(stuck(t) for t in result.tasks)
        note = f"; {blocked} can never start (a blocker failed)" if blocked else ""
        head = f"All {len(result.tasks)} tasks are finished ({tally}){note}."
    else:
        head = (
            f"Timed out after {seconds:g}s with {len(result.open)} of {len(result.tasks)} tasks "
            f"still open ({tally}); call waitForTeam again to keep waiting."
        )
    return head + "\n" + board_text(result.tasks, full=True)
