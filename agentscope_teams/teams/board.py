"""The task board: tasks as versioned records, every transition one operation of its queue.

**Transitions.** The board checks every input against :mod:`.rules.limits`, then asks its queue
(:mod:`.queues`): the store's native queue (Redis: one Lua script; PostgreSQL, MariaDB: one
statement or one short transaction) or the generic :class:`~.queues.store.StoreQueue` (a
conditional ``put`` per transition over any store). Whichever it is, a queue only *decides*: a
refusal comes back with the record as read, and the board raises the error the Python rule
(:mod:`.rules.eligibility`, :mod:`.rules.transitions`) gives for it, so the texts a model reads
have one home. Of two racing claimers exactly one wins.

A claim that meets an expired lease returns the task to pending and claims it in the same write (or
fails it at ``max_attempts``); :meth:`TaskBoard.reap_expired` sweeps without claiming. A task whose
index entry was lost (deleted by hand) is found only by a named claim until
:meth:`TaskBoard.rebuild_index` (a full scan) repairs the queue's index. Leases use wall-clock UTC,
since claimers run in several processes and hosts: keep clocks NTP-synchronised and leases much
longer than the expected skew.

The reads, and how they treat a task record that cannot be decoded, are
:class:`~.board_reads.BoardReads`; the bounds of every input, :mod:`.rules.limits`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import anyio.to_thread

from .. import tracing
from ..errors import InvalidSchema, ResultUnchecked, TeamError, UnknownTaskError
from .board_reads import BoardReads
from .queues.base import Finish, Outcome, TeamGuard, Verdict
from .rules import limits
from .rules import transitions as rules
from .rules.models import Task, TaskStatus
from .rules.transitions import Change

#: Times a transition is retried when its queue's refusal meets a record the rule allows.
NATIVE_RETRIES = 5


class Ended(NamedTuple):
    """The task a transition returned, and whether it was written (False: an idempotent repeat,
    e.g. a second cancel: the caller fires no end hook for it again)."""

    task: Task
    changed: bool


class TaskBoard(BoardReads):
    """All task operations of one team. Membership is checked by the caller (the team client);
    the reads (``load``, ``get``, ``list_tasks``, ``open_tasks``, ``open_board``) are
    :class:`~.board_reads.BoardReads`; every transition runs on :attr:`queue`."""

    @property
    def native(self) -> bool:
        """Whether the board runs on its store's native queue (False: the generic one)."""
        return self.queue.native

    async def create(
        self,
        actor: str,
        title: str,
        description: str = "",
        *,
        assignee: str | None = None,
        blocked_by: Sequence[str] = (),
        max_attempts: int = 3,
        task_lease: float = 60.0,
        result_schema: Mapping[str, Any] | None = None,
    ) -> Task:
        """Create a pending task: :meth:`draft` then :meth:`publish`."""
        return await self.publish(
            await self.draft(
                actor,
                title,
                description,
                assignee=assignee,
                blocked_by=blocked_by,
                max_attempts=max_attempts,
                task_lease=task_lease,
                result_schema=result_schema,
            )
        )

    async def draft(
        self,
        actor: str,
        title: str,
        description: str = "",
        *,
        assignee: str | None = None,
        blocked_by: Sequence[str] = (),
        max_attempts: int = 3,
        task_lease: float = 60.0,
        result_schema: Mapping[str, Any] | None = None,
    ) -> Task:
        """The task :meth:`create` would write, with its id, not written: nobody can read, claim
        or block on it until :meth:`publish` (a draft never published leaves only a gap in the
        ids). Every blocker must already exist (so there are no cycles); every field is checked
        against :mod:`.rules.limits`; ``result_schema`` (a JSON schema) is what its completion's
        ``data`` must match."""
        schema = None
        if result_schema is not None:  # checking a large schema takes a while: off the loop
            schema = await anyio.to_thread.run_sync(limits.result_schema, result_schema)
        fields = {
            "result_schema": schema,
            "title": limits.title(title),
            "description": limits.text(description, "description"),
            "assignee": None if assignee is None else limits.name(assignee, "assignee"),
            "max_attempts": limits.attempts(max_attempts),
            "lease_seconds": limits.lease(task_lease),
        }
        blockers = limits.blockers(blocked_by)
        missing = [b for b in blockers if (await self._status(b))[1] is None]
        if missing:
            raise UnknownTaskError(
                f"cannot block on unknown task(s) {', '.join(map(repr, missing))} "
                f"in team {self.keys.team_id!r}; create the blockers first"
            )
        seq = await self.store.append(self.keys.task_seq(), b"task")
        task = rules.created(seq, actor, self.clock(), blocked_by=blockers, **fields)
        task.trace_context = tracing.carrier()
        return task

    async def publish(self, task: Task) -> Task:
        """Write a :meth:`draft` and put it in the queue: from now on it is on the board."""
        task = await self._write(task)
        await self.queue.enqueue(task)
        return task

    async def claim(self, member: str, task_id: str, task_lease: float) -> Task:
        """Claim one named task: one winner; the owner claiming again renews its lease."""
        task_lease = limits.lease(task_lease)
        queue = self.queue
        return await self._native(
            task_id,
            lambda now: queue.claim(member, task_id, task_lease, now),
            lambda task, now: self._claim_refused(task, member, now),
        )

    @property
    def guards_team(self) -> bool:
        """Whether :meth:`claim_next` and :meth:`complete` / :meth:`fail` take a ``guard``
        (:class:`~.queues.base.TeamGuard`): the native queue checks the team record in the same
        statement, so the team client need not read it per call."""
        return self.queue.guards_team

    @property
    def signals_finish(self) -> bool:
        """Whether a completion or failure wakes the team's waiters itself (PostgreSQL's queue
        notifies right after its finish statement), so the caller sends no signal of its own."""
        return bool(getattr(self.queue, "signals_finish", False))

    @property
    def guards_own(self) -> bool:
        """Whether :meth:`claim_next` takes a ``guard`` together with ``prefer_own`` (Redis: one
        script call for the model's ``claimTask``)."""
        return self.queue.guards_team and bool(getattr(self.queue, "guards_own", False))

    async def claim_next(
        self,
        member: str,
        task_lease: float,
        *,
        prefer_own: bool = False,
        guard: TeamGuard | None = None,
    ) -> Task | None:
        """Claim a task whose lease expired, else the oldest claimable pending task; None if none
        (or, with a ``guard``, if the team record is no longer at its version).

        With ``prefer_own``, a task ``member`` holds already (its process died, or the reply to its
        claim was lost) comes first: the oldest is returned with its lease renewed.
        """
        task_lease = limits.lease(task_lease)
        return await self.queue.claim_next(
            member, task_lease, self.clock(), prefer_own=prefer_own, guard=guard
        )

    async def complete(
        self,
        member: str,
        task_id: str,
        result: str,
        data: Any = None,
        *,
        guard: TeamGuard | None = None,
    ) -> Task:
        """Complete an owned task with its ``result`` text and structured ``data`` (checked
        against the task's ``result_schema``; invalid data raises and nothing is written). With a
        ``guard``, :class:`~.queues.base.TeamChanged` when the team record moved on."""
        result = limits.text(result, "result")
        data = limits.json_size(data, "data")
        ended = await self._finish(member, task_id, TaskStatus.COMPLETED, result, data, guard)
        return ended.task

    async def fail(
        self, member: str, task_id: str, error: str, *, guard: TeamGuard | None = None
    ) -> Task:
        return (await self.failed(member, task_id, error, guard=guard)).task

    async def failed(
        self, member: str, task_id: str, error: str, *, guard: TeamGuard | None = None
    ) -> Ended:
        """:meth:`fail`, and whether this call failed the task (not a repeat by its owner)."""
        error = limits.text(error, "error")
        return await self._finish(member, task_id, TaskStatus.FAILED, error, guard=guard)

    async def _finish(
        self,
        member: str,
        task_id: str,
        status: TaskStatus,
        text: str,
        data: Any = None,
        guard: TeamGuard | None = None,
    ) -> Ended:
        detail = rules.finish_detail(text)
        how = Finish(status, text, detail, data)

        async def refused(task: Task, now: datetime) -> None:
            # A task with a result schema is refused until its data is checked against it: the
            # check runs here, off the event loop (invalid data raises, nothing is written), and
            # the next attempt carries the data as checked. A stored schema the current rules
            # refuse fails the task instead, with why (rules.schema_refused).
            nonlocal how
            try:
                rules.finish(member, how.status, how.text, how.data, how.checked)(task, now)
            except ResultUnchecked:
                try:
                    checked = await rules.check_result(task, data)
                except InvalidSchema as exc:
                    error = rules.schema_refused(task, member, text, exc)
                    how = Finish(TaskStatus.FAILED, error, rules.finish_detail(error))
                else:
                    how = Finish(status, text, detail, checked, checked=True)

        queue = self.queue
        return await self._transition(
            task_id, lambda now: queue.finish(member, task_id, how, now, guard), refused
        )

    async def release(self, member: str, task_id: str) -> Task:
        change, queue = rules.release(member), self.queue
        return await self._native(
            task_id, lambda now: queue.release(member, task_id, now), _refused(change)
        )

    async def renew_lease(self, member: str, task_id: str, task_lease: float | None) -> Task:
        """The owner extends its task lease (``task_lease`` seconds from now; None: as before)."""
        lease = None if task_lease is None else limits.lease(task_lease)
        change, queue = rules.renew_lease(member, lease), self.queue
        return await self._native(
            task_id, lambda now: queue.renew(member, task_id, lease, now), _refused(change)
        )

    async def cancel(self, actor: str, task_id: str, reason: str) -> Task:
        return (await self.cancelled(actor, task_id, reason)).task

    async def cancelled(self, actor: str, task_id: str, reason: str) -> Ended:
        """:meth:`cancel`, and whether this call cancelled the task (not a repeat)."""
        reason = limits.text(reason, "reason")
        change, queue = rules.cancel(actor, reason), self.queue
        return await self._transition(
            task_id, lambda now: queue.cancel(actor, task_id, reason, now), _refused(change)
        )

    async def _native(
        self,
        task_id: str,
        call: Callable[[datetime], Awaitable[Outcome]],
        refused: Callable[[Task, datetime], Awaitable[None]],
    ) -> Task:
        """:meth:`_transition`'s task."""
        return (await self._transition(task_id, call, refused)).task

    async def _transition(
        self,
        task_id: str,
        call: Callable[[datetime], Awaitable[Outcome]],
        refused: Callable[[Task, datetime], Awaitable[None]],
    ) -> Ended:
        """Run one transition on the queue; a refusal raises the Python rule's error for the record
        the queue read (``refused``). Should the rule allow it after all (the record changed in
        between), the transition runs again. ``changed`` is False for an idempotent repeat."""
        limits.name(task_id, "task_id")  # never hand the database a NUL or a lone surrogate
        for _ in range(NATIVE_RETRIES):
            now = self.clock()
            out = await call(now)
            if out.verdict is Verdict.MISSING or out.task is None:
                raise self._missing(task_id)
            if out.verdict is not Verdict.REFUSED:
                return Ended(out.task, out.verdict is Verdict.DONE)
            await refused(out.task, now)
        raise TeamError(
            f"the board's queue refused {task_id!r} {NATIVE_RETRIES} times while the claim rule "
            "allowed it; run the board with AGENTSCOPE_TEAMS_BOARD_NATIVE=0 and report this"
        )

    async def _claim_refused(self, task: Task, member: str, now: datetime) -> None:
        verdict = await self._verdict(task, member, now, {})
        if not verdict.ok:
            raise verdict.error()

    async def reap_expired(self) -> list[Task]:
        """Return every task whose lease expired to pending (or fail it at max_attempts)."""
        return await self.queue.reap(self.clock())

    async def rebuild_index(self) -> int:
        """Full scan: rebuild the queue's index from the records (the generic queue gives every
        unfinished task its index entries, moving in-progress tasks out of the pending index of an
        older board). Returns the count of unfinished tasks."""
        tasks = await self.all_tasks()
        await self.queue.rebuild(tasks)
        return sum(1 for t in tasks if not t.status.finished)

    async def drop_index(self) -> None:
        """Delete the queue's index (the team's records are being deleted; the generic index
        entries are records under the team's prefix and go with them)."""
        await self.queue.drop()


def _refused(change: Change) -> Callable[[Task, datetime], Awaitable[None]]:
    """The refusal of a transition: ``change`` raises the rule's error for the record."""

    async def refused(task: Task, now: datetime) -> None:
        change(task, now)

    return refused
