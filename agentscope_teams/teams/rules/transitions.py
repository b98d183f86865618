"""Pure task transitions: given a task as read and the time, compute the record to write (or refuse).

Nothing here touches the store; :mod:`..board` writes the result with one conditional ``put``. A
``Change`` returns None when there is nothing to write (an idempotent repeat of the same request).
Whether a member may claim a task (and why not) is not decided here but in :mod:`.eligibility`;
:func:`claimed`, :func:`renewed` and :func:`expired` are the records a claim it allows writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from ... import schema_guard
from ...agent.output import MAX_PROBLEMS
from ...errors import (
    InvalidSchema,
    NotTaskOwnerError,
    OutputValidationError,
    ResultUnchecked,
    TaskStateError,
)
from . import limits
from .models import Task, TaskEvent, TaskStatus

Change = Callable[[Task, datetime], Task | None]
BOARD = "board"


def _with(task: Task, now: datetime, actor: str, action: str, detail: str, **changes: Any) -> Task:
    """A copy of ``task`` with ``changes`` applied and one history event appended."""
    event = TaskEvent(at=now, actor=actor, action=action, detail=detail)
    update = {**changes, "updated_at": now, "history": [*task.history, event]}
    return task.model_copy(update=update)


def created(seq: int, actor: str, now: datetime, **fields: Any) -> Task:
    """A new pending task numbered ``seq`` (id ``t-<seq>``) with its "created" event."""
    detail = f"assigned to {fields['assignee']!r}" if fields.get("assignee") else ""
    event = TaskEvent(at=now, actor=actor, action="created", detail=detail)
    return Task(id=f"t-{seq}", seq=seq, history=[event], created_at=now, updated_at=now, **fields)


def claimed(task: Task, member: str, now: datetime, task_lease: float) -> Task:
    """``task`` (pending) claimed by ``member``: one more attempt, a fresh lease."""
    task_lease = limits.lease(task_lease)
    n = task.attempts + 1
    return _with(
        task,
        now,
        member,
        "claimed",
        f"attempt {n} of {task.max_attempts}",
        status=TaskStatus.IN_PROGRESS,
        owner=member,
        attempts=n,
        lease_seconds=task_lease,
        lease_expires_at=now + timedelta(seconds=task_lease),
    )


def renewed(task: Task, now: datetime, task_lease: float | None = None) -> Task:
    """The owner's task lease extended (no history entry: a renewal is not a transition).

    Without ``task_lease`` the task's own lease is renewed; one stored before the bounds of
    :mod:`.limits` existed (say 1e12 seconds) is refused with :class:`LimitError`.
    """
    seconds = limits.lease(task.lease_seconds if task_lease is None else task_lease)
    return task.model_copy(
        update={
            "lease_seconds": seconds,
            "lease_expires_at": now + timedelta(seconds=seconds),
            "updated_at": now,
        }
    )


def expired(task: Task, now: datetime) -> Task:
    """An in-progress task whose lease ran out: back to pending, or failed once attempts are used."""
    owner = task.owner
    if task.attempts >= task.max_attempts:
        error = (
            f"task {task.id!r} failed: the lease of {owner!r} expired and all "
            f"{task.max_attempts} attempts are used; assign a new task to retry"
        )
        return _with(
            task,
            now,
            BOARD,
            "lease_expired",
            error,
            status=TaskStatus.FAILED,
            error=error,
            lease_expires_at=None,
        )
    detail = f"{owner!r} stopped renewing its lease; back to pending"
    return _with(
        task,
        now,
        BOARD,
        "lease_expired",
        detail,
        status=TaskStatus.PENDING,
        owner=None,
        lease_expires_at=None,
    )


def require_owner(task: Task, member: str, verb: str) -> None:
    """Raise unless ``member`` owns ``task`` and it is in progress."""
    if task.status is TaskStatus.IN_PROGRESS:
        if task.owner != member:
            raise NotTaskOwnerError(
                f"task {task.id!r} is owned by {task.owner!r}, not {member!r}; "
                f"only the owner may {verb} it"
            )
        return
    if task.status is TaskStatus.PENDING:
        raise TaskStateError(
            f"task {task.id!r} is pending, not in progress; claim it before you {verb} it"
        )
    raise TaskStateError(f"task {task.id!r} is already {task.status.value}; cannot {verb} it")


def required_data(task: Task, data: Any) -> None:
    """Raise :class:`OutputValidationError` when ``task`` declares a result schema and ``data`` is
    missing."""
    if task.result_schema is not None and data is None:
        raise OutputValidationError(
            f"the result of task {task.id}",
            ["data: required, this task declares a result schema"],
            f"task {task.id!r} declares a result schema: complete it with data matching it "
            f"(listTasks or claimTask shows the schema): {json.dumps(task.result_schema)}",
        )


async def check_result(task: Task, data: Any) -> Any:
    """``data`` checked against the task's ``result_schema`` in a worker thread, within the bounds
    of :data:`.limits.RESULT_SCHEMA_LIMITS`: :class:`OutputValidationError` (a ``ValueError``)
    lists every problem with its path, or the bound that stopped the check. A stored schema the
    current rules refuse (one accepted before them) raises :class:`InvalidSchema`; the board then
    fails the task with :func:`schema_refused`."""
    required_data(task, data)
    if task.result_schema is None:
        return data
    problems = await schema_guard.problems_async(
        task.result_schema, data, limits.RESULT_SCHEMA_LIMITS
    )
    if len(problems) > MAX_PROBLEMS:
        problems = [*problems[:MAX_PROBLEMS], f"... and {len(problems) - MAX_PROBLEMS} more"]
    if problems:
        raise OutputValidationError(f"the result of task {task.id}", problems)
    return data


def schema_refused(task: Task, member: str, result: str, exc: InvalidSchema) -> str:
    """The error of a task failed because its stored ``result_schema`` is refused by the rules of
    :mod:`~agentscope_teams.schema_guard` (it was accepted before them): the reason, what to do,
    and the member's result so no work is lost."""
    head = (
        f"task {task.id!r} failed: its result_schema was stored before the current schema rules "
        f"and is {exc}; the result of {member!r} was not checked against it, so the task is failed "
        "instead of completed. Create the task again with a schema within the rules "
        "(docs/security.md, 'JSON Schemas we accept'). The result was: "
    )
    return head + result[: max(0, limits.MAX_TEXT - len(head))]


def finish_detail(text: str) -> str:
    """The history detail of a completion or failure: its text, cut to 200 characters."""
    return text if len(text) <= 200 else text[:197] + "..."


def finish(
    member: str, status: TaskStatus, text: str, data: Any = None, checked: bool = False
) -> Change:
    """Complete (``text`` = result) or fail (``text`` = error); a repeat by the owner is a no-op.
    Completing a task with a ``result_schema`` needs ``data`` already checked against it
    (``checked``, see :func:`check_result`), else :class:`ResultUnchecked`; nothing is written."""
    verb = "complete" if status is TaskStatus.COMPLETED else "fail"
    field = "result" if status is TaskStatus.COMPLETED else "error"

    def change(task: Task, now: datetime) -> Task | None:
        if task.status is status and task.owner == member:
            return None
        require_owner(task, member, verb)
        extra: dict[str, Any] = {}
        if status is TaskStatus.COMPLETED:
            required_data(task, data)
            if task.result_schema is not None and not checked:
                raise ResultUnchecked(
                    f"the data completing task {task.id!r} is not checked against its schema yet"
                )
            extra["result_data"] = data
        return _with(
            task,
            now,
            member,
            status.value,
            finish_detail(text),
            status=status,
            lease_expires_at=None,
            **{field: text},
            **extra,
        )

    return change


def release(member: str) -> Change:
    """The owner gives the task back: pending again, claimable by anyone allowed."""

    def change(task: Task, now: datetime) -> Task | None:
        require_owner(task, member, "release")
        return _with(
            task,
            now,
            member,
            "released",
            "",
            status=TaskStatus.PENDING,
            owner=None,
            lease_expires_at=None,
        )

    return change


def renew_lease(member: str, task_lease: float | None) -> Change:
    """The owner renews its lease."""

    def change(task: Task, now: datetime) -> Task | None:
        require_owner(task, member, "renew the lease of")
        return renewed(task, now, task_lease)

    return change


def cancel(actor: str, reason: str) -> Change:
    """Cancel a pending or in-progress task; cancelling a cancelled task is a no-op."""

    def change(task: Task, now: datetime) -> Task | None:
        if task.status is TaskStatus.CANCELLED:
            return None
        if task.status.finished:
            raise TaskStateError(
                f"task {task.id!r} is already {task.status.value}; it cannot be cancelled"
            )
        return _with(
            task,
            now,
            actor,
            "cancelled",
            reason,
            status=TaskStatus.CANCELLED,
            error=reason or None,
            lease_expires_at=None,
        )

    return change
