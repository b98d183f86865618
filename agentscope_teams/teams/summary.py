"""Waiting for a team: poll its board until every task is settled (see :mod:`.results` for the text)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from .protocol import TeamClient
from .rules.eligibility import never_starts
from .rules.models import Task, TaskStatus


@dataclass(frozen=True)
class TeamWaitResult:
    """Every task of the team when the wait ended; ``done`` unless the deadline passed first or
    the wait was cut short (``stopped``: why no more progress can come, e.g. a spent budget)."""

    done: bool
    tasks: list[Task]
    stopped: str | None = None

    @property
    def open(self) -> list[Task]:
        return [t for t in self.tasks if not settled(t)]


def parse_status(status: str | None) -> TaskStatus | None:
    return None if status is None else TaskStatus(status)


def stuck(task: Task) -> bool:
    """A pending task that can never start (see :func:`~.rules.eligibility.never_starts`)."""
    return never_starts(task.status, task.blocked_reason)


def settled(task: Task) -> bool:
    return task.status.finished or stuck(task)


async def wait_for_team(
    client: TeamClient,
    team_id: str,
    timeout: float,  # noqa: ASYNC109 - a deadline that returns a result, not an exception
    stopped: Callable[[], Awaitable[str | None]] | None = None,
) -> TeamWaitResult:
    """Poll (with backoff) until every task is completed, failed, cancelled or stuck behind a
    failed blocker, or ``timeout`` seconds passed, or ``stopped()`` (asked at each look while
    tasks are open) says why the open ones cannot progress; returns every task either way."""
    deadline, delay = anyio.current_time() + timeout, 0.05
    while True:
        tasks = await client.list_tasks(team_id)
        if all(settled(t) for t in tasks):
            return TeamWaitResult(True, tasks)
        why = await stopped() if stopped is not None else None
        if why is not None:
            return TeamWaitResult(False, tasks, why)
        remaining = deadline - anyio.current_time()
        if remaining <= 0:
            return TeamWaitResult(False, tasks)
        await anyio.sleep(min(delay, remaining))
        delay = min(delay * 1.5, 1.0)
