"""What a board's queue is: :class:`BoardQueue`, the transitions every queue runs, and its answers.

:class:`~..board.TaskBoard` runs every transition (claim next, named claim, complete, fail, release,
renew, cancel, lease expiry) on the queue :func:`~.factory.board_queue_of` picks for its store: a
backend's native one (Redis: :mod:`.redis`; PostgreSQL and MariaDB: :mod:`.sql`), one server-side
operation each, or the generic :class:`~.store.StoreQueue` (memory, file, SQLite, or when forced):
conditional ``put`` s over :class:`~agentscope_teams.store.base.BaseStore`.

**One truth, one rule.** The task record (the JSON :class:`~..rules.models.Task` under its store
key) stays the single truth and every transition writes it with version + 1, so ``store.get`` and
every queue see the same records. Each native queue encodes the claim rule of
:mod:`..rules.eligibility` once more (a Lua function, a SQL predicate); the board's conformance tests
run every scenario on both queues of every backend, and ``tests/teams/test_claim_rule_agrees.py``
checks the forms against :func:`~..rules.eligibility.claim_verdict` verdict by verdict. A queue
only *decides*: a refusal comes back as :data:`Verdict.REFUSED` with the record as read, and the
board raises the error the Python rule gives for it, so the texts a model reads have one home.

**The indexes.** Each queue finds work through its own index of pending and in-progress tasks
(Redis sorted sets in the team's hash slot, a tasks table on SQL, index entries under the team's
prefix for the generic queue); all read the records. All processes serving a team must use the
same queue (see :mod:`.factory`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum
from typing import Any, Protocol

from ...store.base import Key
from ..rules import transitions as rules
from ..rules.models import Task, TaskStatus

#: Set to ``0`` to force the board's generic path on every backend.
NATIVE_ENV = "AGENTSCOPE_TEAMS_BOARD_NATIVE"


class Verdict(IntEnum):
    """What a native transition did."""

    DONE = 1  #: written (version + 1)
    UNCHANGED = 0  #: an idempotent repeat: nothing written
    REFUSED = -1  #: the rule refused: the board raises the error for the record as read
    MISSING = -2  #: no such task


@dataclass(frozen=True, slots=True)
class Outcome:
    """A native transition's verdict and the record it wrote (or read, when refused)."""

    verdict: Verdict
    task: Task | None = None


@dataclass(frozen=True, slots=True)
class Finish:
    """A completion or failure: the status, the text, the history detail (see
    :func:`~..rules.transitions.finish_detail`) and a completion's structured ``data``. A queue that does not
    run :func:`~..rules.transitions.finish` itself refuses to complete a task declaring a ``result_schema``
    unless ``checked`` (the board validated ``data`` against that schema, off the event loop);
    one that runs it passes ``checked`` on, and the rule refuses likewise."""

    status: TaskStatus
    text: str
    detail: str
    data: Any = None
    checked: bool = False


@dataclass(frozen=True, slots=True)
class TeamGuard:
    """The team record as the caller last read it (and checked the member against): a queue that
    :attr:`~BoardQueue.guards_team` runs a guarded claim or finish only while the record is still
    at ``version``, in the same statement, so the caller need not read it again per call."""

    key: Key
    version: int


class TeamChanged(Exception):
    """A guarded finish found the team record changed (or gone): read it again and retry."""


class BoardQueue(Protocol):
    """The native operations of one team's board (see the module docs).

    Times are the board's clock (wall-clock UTC), passed in so every path judges leases alike.
    ``*_tasks`` return records decoded; an undecodable record comes back as its exception.
    A ``guard`` (:class:`TeamGuard`) may be passed to ``claim_next`` and ``finish`` only when
    :attr:`guards_team`: a stale one makes ``claim_next`` claim nothing and ``finish`` raise
    :class:`TeamChanged`.
    """

    #: Whether ``claim_next`` and ``finish`` take a :class:`TeamGuard`.
    guards_team: bool
    #: Whether this is a backend's native queue (False: the generic :class:`~.store.StoreQueue`).
    native: bool

    async def enqueue(self, task: Task) -> None:
        """Index a task just created (its record is written already)."""
        ...

    async def claim_next(
        self,
        member: str,
        lease: float,
        now: datetime,
        *,
        prefer_own: bool,
        guard: TeamGuard | None = None,
    ) -> Task | None: ...

    async def claim(self, member: str, task_id: str, lease: float, now: datetime) -> Outcome: ...

    async def finish(
        self, member: str, task_id: str, how: Finish, now: datetime, guard: TeamGuard | None = None
    ) -> Outcome: ...

    async def release(self, member: str, task_id: str, now: datetime) -> Outcome: ...

    async def renew(
        self, member: str, task_id: str, lease: float | None, now: datetime
    ) -> Outcome: ...

    async def cancel(self, actor: str, task_id: str, reason: str, now: datetime) -> Outcome: ...

    async def reap(self, now: datetime) -> list[Task]:
        """Settle every expired lease (back to pending, or failed at max attempts)."""
        ...

    async def open_tasks(self) -> list[tuple[str, Task | Exception]]:
        """Every pending and in-progress task as (id, record or why it cannot be decoded)."""
        ...

    async def rebuild(self, tasks: Sequence[Task]) -> None:
        """Replace the queue's index with one computed from ``tasks`` (every task of the team)."""
        ...

    async def drop(self) -> None:
        """Delete the queue's index (the team is being deleted)."""
        ...


def no_guard(guard: TeamGuard | None) -> None:
    """Refuse a guard on a queue that cannot check one (the caller must read the team itself)."""
    if guard is not None:
        raise TypeError("this board queue does not check team guards (guards_team is False)")


def native_wanted(native: bool | None) -> bool:
    """Whether a board should use a native queue: ``native`` if given, else the environment."""
    if native is not None:
        return native
    return os.environ.get(NATIVE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


class RuleTransitions:
    """``finish``, ``release``, ``renew`` and ``cancel`` as the Python rule's changes, applied by
    the queue's own ``_changed`` (a conditional write on the store, a locked row on SQL)."""

    async def _changed(self, task_id: str, change: rules.Change, now: datetime) -> Outcome:
        raise NotImplementedError

    async def finish(
        self, member: str, task_id: str, how: Finish, now: datetime, guard: TeamGuard | None = None
    ) -> Outcome:
        no_guard(guard)
        change = rules.finish(member, how.status, how.text, how.data, how.checked)
        return await self._changed(task_id, change, now)

    async def release(self, member: str, task_id: str, now: datetime) -> Outcome:
        return await self._changed(task_id, rules.release(member), now)

    async def renew(self, member: str, task_id: str, lease: float | None, now: datetime) -> Outcome:
        return await self._changed(task_id, rules.renew_lease(member, lease), now)

    async def cancel(self, actor: str, task_id: str, reason: str, now: datetime) -> Outcome:
        return await self._changed(task_id, rules.cancel(actor, reason), now)
