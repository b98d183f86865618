"""Who may claim a task now, and why not: the one home of the claim rule.

:func:`claim_verdict` is a pure function of a task as read, the claiming member, the statuses of the
task's blockers and the time. The named claim and the anonymous claim (:class:`~..board.TaskBoard`)
and the runtime's offers (:mod:`..member.work`) all ask it; none of them restates the rule. The checks, in
order (the first that applies decides):

1. in progress and owned by the member: ``RENEW`` (claiming again renews its lease);
2. in progress, held by another member whose lease is live: ``HELD``;
3. in progress with an expired lease and every attempt used: ``EXHAUSTED`` (it fails);
4. completed, failed or cancelled: ``FINISHED``;
5. assigned to another member: ``ASSIGNED``;
6. pending and blocked: ``BLOCKED`` (a blocker failed, was cancelled or deleted) or ``WAITING``;
7. otherwise ``CLAIM`` (pending) or ``RECLAIM`` (the lease ran out: back to pending and claimed in
   the same write).

Blockers are only consulted for a pending task: an in-progress task's blockers were all completed
when it was claimed, and a completed task never changes again. An anonymous claim looks for a task
the member does not hold yet, so it asks with ``renew_own=False``: its own task then counts like
anyone else's (held while the lease is live, reclaimed as a new attempt once it ran out).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from ...errors import ClaimConflict, TaskStateError, TeamError
from . import transitions as rules
from .models import Task, TaskStatus


class ClaimOutcome(StrEnum):
    """What a claim of one task by one member does now; the first three let it claim."""

    CLAIM = "claim"
    RENEW = "renew"
    RECLAIM = "reclaim"
    HELD = "held"
    EXHAUSTED = "exhausted"
    FINISHED = "finished"
    ASSIGNED = "assigned"
    WAITING = "waiting"
    BLOCKED = "blocked"

    @property
    def ok(self) -> bool:
        return self in (ClaimOutcome.CLAIM, ClaimOutcome.RENEW, ClaimOutcome.RECLAIM)


@dataclass(frozen=True, slots=True)
class ClaimVerdict:
    """The answer of :func:`claim_verdict`; ``message`` says why not (empty when ``ok``)."""

    outcome: ClaimOutcome
    task_id: str
    message: str = ""
    #: The task is in progress and its lease ran out (a refusal may still write the expiry back).
    lease_expired: bool = False
    #: The member holding the task (for ``HELD``).
    holder: str | None = None

    @property
    def ok(self) -> bool:
        return self.outcome.ok

    def error(self) -> TeamError:
        """The error a named claim raises for this refusal."""
        if self.outcome in (ClaimOutcome.HELD, ClaimOutcome.ASSIGNED):
            return ClaimConflict(self.task_id, self.holder, self.message)
        return TaskStateError(self.message)


@dataclass(frozen=True, slots=True)
class Blockage:
    """Why a pending task cannot start yet: ``BLOCKED`` (a blocker failed, was cancelled or deleted:
    it never will) or ``WAITING`` (for unfinished blockers)."""

    outcome: ClaimOutcome
    reason: str


def blockage(task: Task, states: Mapping[str, TaskStatus | None]) -> Blockage | None:
    """What keeps a pending ``task`` from starting, from its blockers' statuses (None = deleted)."""
    if task.status is not TaskStatus.PENDING:
        return None
    dead = [
        f"{'deleted' if s is None else s.value} task {b!r}"
        for b, s in states.items()
        if s is None or s in (TaskStatus.FAILED, TaskStatus.CANCELLED)
    ]
    if dead:
        return Blockage(ClaimOutcome.BLOCKED, DEAD_BLOCKERS + ", ".join(dead))
    waiting = [b for b, s in states.items() if s is not TaskStatus.COMPLETED]
    if waiting:
        reason = "waiting for unfinished task(s) " + ", ".join(map(repr, waiting))
        return Blockage(ClaimOutcome.WAITING, reason)
    return None


#: How ``blocked_reason`` starts when a blocker failed, was cancelled or deleted.
DEAD_BLOCKERS = "blocked by "


def never_starts(status: TaskStatus, blocked_reason: str | None) -> bool:
    """A pending task that can never start: one of its blockers failed, was cancelled or deleted
    (what :func:`blocked_reason` says of it)."""
    return status is TaskStatus.PENDING and (blocked_reason or "").startswith(DEAD_BLOCKERS)


def blocked_reason(task: Task, states: Mapping[str, TaskStatus | None]) -> str | None:
    """The text of :func:`blockage` (a task's computed ``blocked_reason``), or None."""
    found = blockage(task, states)
    return None if found is None else found.reason


def holds(task: Task, member: str) -> bool:
    """``member`` owns ``task`` and it is in progress (whatever the state of its lease)."""
    return task.status is TaskStatus.IN_PROGRESS and task.owner == member


def claim_verdict(
    task: Task,
    member: str,
    blockers: Mapping[str, TaskStatus | None],
    now: datetime,
    *,
    renew_own: bool = True,
) -> ClaimVerdict:
    """Whether ``member`` may claim ``task`` at ``now``, and why not (see the module docs).

    ``blockers`` maps each id of ``task.blocked_by`` to its status (None = deleted); it is only read
    for a pending task that passes every other check (:func:`needs_blockers` says when).
    """

    def no(outcome: ClaimOutcome, message: str, holder: str | None = None) -> ClaimVerdict:
        return ClaimVerdict(outcome, task.id, message, expired, holder)

    expired = task.lease_expired(now)
    if renew_own and holds(task, member):
        return ClaimVerdict(ClaimOutcome.RENEW, task.id, lease_expired=expired)
    if task.status is TaskStatus.IN_PROGRESS:
        if not expired:
            held = f"task {task.id!r} is already claimed by {task.owner!r}; claim another task"
            return no(ClaimOutcome.HELD, held, task.owner)
        if task.attempts >= task.max_attempts:
            return no(ClaimOutcome.EXHAUSTED, rules.expired(task, now).error or "")
    elif task.status.finished:
        state = task.status.value
        return no(
            ClaimOutcome.FINISHED,
            f"task {task.id!r} is already {state}; it cannot be claimed again",
        )
    if task.assignee not in (None, member):
        return no(
            ClaimOutcome.ASSIGNED,
            f"task {task.id!r} is assigned to {task.assignee!r}, not {member!r}; claim another task",
        )
    if task.status is TaskStatus.PENDING:
        found = blockage(task, {b: blockers.get(b) for b in task.blocked_by})
        if found is not None:
            return no(
                found.outcome, f"task {task.id!r} cannot be claimed yet: it is {found.reason}"
            )
        return ClaimVerdict(ClaimOutcome.CLAIM, task.id)
    return ClaimVerdict(ClaimOutcome.RECLAIM, task.id, lease_expired=True)


def needs_blockers(task: Task, member: str, now: datetime, *, renew_own: bool = True) -> bool:
    """Whether the verdict on ``task`` turns on its blockers' statuses (read them only then)."""
    if not task.blocked_by:
        return False
    done: dict[str, TaskStatus | None] = dict.fromkeys(task.blocked_by, TaskStatus.COMPLETED)
    verdict = claim_verdict(task, member, done, now, renew_own=renew_own)
    return verdict.outcome is ClaimOutcome.CLAIM


def claimed_record(
    verdict: ClaimVerdict, task: Task, member: str, now: datetime, task_lease: float
) -> Task:
    """The record a claim the verdict allows writes: a renewed lease or a new attempt."""
    if verdict.outcome is ClaimOutcome.RENEW:
        return rules.renewed(task, now, task_lease)
    if verdict.outcome is ClaimOutcome.RECLAIM:
        task = rules.expired(task, now)
    elif verdict.outcome is not ClaimOutcome.CLAIM:
        raise verdict.error()
    return rules.claimed(task, member, now, task_lease)


def offerable(verdict: ClaimVerdict) -> bool:
    """Worth waking the member for: it may claim the task, or the task's lease ran out with every
    attempt used (the member's claim then records it as failed, so the team is not left waiting)."""
    return verdict.ok or verdict.outcome is ClaimOutcome.EXHAUSTED
