"""The task board: tasks as versioned records, every transition one conditional write.

**Transitions.** A task is read, the new record is computed by a pure rule (:mod:`.rules`; who may
claim is :func:`~.eligibility.claim_verdict`) and written with ``put(expected_version=<version
read>)``. Of two racing claimers exactly one wins; the loser re-reads (a named claim then gets
:class:`ClaimConflict`) or moves on to another candidate (an anonymous claim).

**The indexes.** What looks for work reads the task indexes (:mod:`.board_index`), never the whole
board: pending tasks by sequence, in-progress tasks by lease expiry, and each member's own. Every
transition keeps them in step. ``claim_next`` first reads the few in-progress entries whose recorded
expiry has passed (a bounded read: expired leases are reclaimed first), then pages through the
pending index oldest first, reading a small batch of tasks per round trip, and stops at the first
claimable task; with ``prefer_own`` (the ``claimTask`` tool) it first reads the member's own
in-progress tasks. A claim's cost does not grow with how many tasks other members hold, nor with the
board's history. After losing a race a claimer shuffles the rest of its page.
:meth:`TaskBoard.open_board` (the member runtime's poll) reads every unfinished task.

A claim that meets an expired lease returns the task to pending and claims it in the same write (or
fails it at ``max_attempts``); :meth:`TaskBoard.reap_expired` sweeps without claiming. A task whose
index entry was lost (deleted by hand) is found only by a named claim until
:meth:`TaskBoard.rebuild_index` (a full scan) repairs the indexes; it also migrates a board written
before in-progress tasks had their own index (claimers otherwise migrate it as they go). Leases use wall-clock UTC, since claimers run in several processes and
hosts: keep clocks NTP-synchronised and leases much longer than the expected skew.

The reads, and how they treat a task record that cannot be decoded, are
:class:`~.board_reads.BoardReads`; the bounds of every input, :mod:`.limits`.

**The native path.** When the store has a native queue (:mod:`.queue`: Redis, PostgreSQL,
MariaDB), the transitions above run there instead, one round trip (or one short transaction)
each, over the queue's own index; everything said here about the indexes is the generic path's.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import anyio.to_thread

from .. import tracing
from ..errors import (
    InvalidSchema,
    ResultUnchecked,
    TeamError,
    UnknownTaskError,
    VersionConflict,
)
from ..store.base import Key
from .board_reads import Blockers, Read
from .queues.base import BoardQueue, Finish, Outcome, TeamGuard, Verdict, no_guard
from .queues.store_index import BoardIndex
from .rules import eligibility, limits
from .rules import transitions as rules
from .rules.eligibility import ClaimOutcome, ClaimVerdict, claimed_record
from .rules.models import Task, TaskStatus
from .rules.transitions import Change

PAGE = 64
#: Pending candidates read per batched round trip while looking for work.
BATCH = 8
#: Times a native transition is retried when its refusal meets a record the rule allows.
NATIVE_RETRIES = 5


class TaskBoard(BoardIndex):
    """All task operations of one team. Membership is checked by the caller (the team client);
    the reads (``load``, ``get``, ``list_tasks``, ``open_tasks``, ``open_board``) are
    :class:`~.board_reads.BoardReads`."""

    async def _write(self, task: Task) -> Task:
        key = self.keys.task(task.id)
        version = await self.store.put(key, task.to_bytes(), expected_version=task.version)
        return task.model_copy(update={"version": version})

    async def _commit(self, old: Task, new: Task) -> Task:
        """Write ``new`` over ``old`` (conditional on its version), then update the indexes."""
        written = await self._write(new)
        await self._moved(old, written)
        return written

    async def _update(self, task_id: str, change: Change) -> Task:
        """Read-modify-write until the conditional write wins or ``change`` refuses (raises)."""
        while True:
            task = await self._must_load(task_id)
            new = change(task, self.clock())
            if new is None:
                return task
            try:
                return await self._commit(task, new)
            except VersionConflict as exc:
                tracing.conflict(exc.key)
                continue

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
        """Create a pending task; every blocker must already exist (so there are no cycles).

        Every field is checked against :mod:`.limits` before anything is written;
        ``result_schema`` (a JSON schema) is what its completion's ``data`` must match.
        """
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
        task = await self._write(task)
        if self.queue is not None:
            await self.queue.enqueue(task)
        else:
            await self._moved(None, task)
        return task

    async def claim(self, member: str, task_id: str, task_lease: float) -> Task:
        """Claim one named task: one winner; the owner claiming again renews its lease."""
        task_lease = limits.lease(task_lease)
        if self.queue is not None:
            queue = self.queue
            return await self._native(
                task_id,
                lambda now: queue.claim(member, task_id, task_lease, now),
                lambda task, now: self._claim_refused(task, member, now),
            )
        while True:
            task = await self._must_load(task_id)
            now = self.clock()
            verdict = await self._verdict(task, member, now, {})
            exhausted = verdict.outcome is ClaimOutcome.EXHAUSTED  # record the failure first
            if exhausted and await self._settle_expired(task, now) is None:
                continue
            if not verdict.ok:
                raise verdict.error()
            try:
                return await self._commit(
                    task, claimed_record(verdict, task, member, now, task_lease)
                )
            except VersionConflict as exc:
                tracing.conflict(exc.key)
                continue

    @property
    def guards_team(self) -> bool:
        """Whether :meth:`claim_next` and :meth:`complete` / :meth:`fail` take a ``guard``
        (:class:`~.queue.TeamGuard`): the native queue checks the team record in the same
        statement, so the team client need not read it per call."""
        return self.queue is not None and self.queue.guards_team

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
        if self.queue is not None:
            return await self.queue.claim_next(
                member, task_lease, self.clock(), prefer_own=prefer_own, guard=guard
            )
        no_guard(guard)
        for held in await self._owned(member) if prefer_own else ():
            with contextlib.suppress(TeamError):  # taken over or finished meanwhile
                return await self.claim(member, held.id, task_lease)
        cache: Blockers = {}
        now = self.clock()
        for key, task in await self._lapsed(now):
            if await self._repair_held(key, task, now):
                assert isinstance(task, Task)
                claimed, _ = await self._attempt(task, member, task_lease, cache)
                if claimed is not None:
                    return claimed
        async for page in self._pages(self.keys.open_prefix(), PAGE):
            claimed = await self._claim_from(page, member, task_lease, cache)
            if claimed is not None:
                return claimed
        return None

    async def _claim_from(
        self, page: list[Key], member: str, lease: float, cache: Blockers
    ) -> Task | None:
        """Try the pending entries of ``page`` in order, a batch of tasks per round trip."""
        queue, shuffled = list(page), False
        while queue:
            batch, queue = queue[:BATCH], queue[BATCH:]
            entries = await self._entries(batch)
            for i, (key, task) in enumerate(entries):
                claimed, lost = await self._candidate(key, task, member, lease, cache)
                if claimed is not None:
                    return claimed
                if lost:  # the rest of the batch is likely stale: read it again, shuffled
                    queue = [k for k, _ in entries[i + 1 :]] + queue
                    if not shuffled:
                        random.shuffle(queue)
                        shuffled = True
                    break
        return None

    async def _candidate(
        self, key: Key, task: Read, member: str, lease: float, cache: Blockers
    ) -> tuple[Task | None, bool]:
        """One pending-index entry as read: (claimed task or None, whether a race was lost)."""
        if isinstance(task, Exception):  # passed by (and kept in the index); listings report it
            return None, False
        if task is None or task.status is not TaskStatus.PENDING:
            await self._repair_pending(key, task)
            if task is None or not task.lease_expired(self.clock()):
                return None, False
        return await self._attempt(task, member, lease, cache)

    async def _attempt(
        self, task: Task, member: str, lease: float, cache: Blockers
    ) -> tuple[Task | None, bool]:
        """Claim ``task`` as read if the claim rule allows: (claimed or None, whether it lost)."""
        now = self.clock()
        verdict = await self._verdict(task, member, now, cache, renew_own=False)
        if not verdict.ok:
            if verdict.lease_expired:
                await self._settle_expired(task, now)
            return None, False
        try:
            return await self._commit(
                task, claimed_record(verdict, task, member, now, lease)
            ), False
        except VersionConflict as exc:
            tracing.conflict(exc.key)
            return None, True

    async def _verdict(
        self, task: Task, member: str, now: datetime, cache: Blockers, renew_own: bool = True
    ) -> ClaimVerdict:
        """The claim rule's verdict, reading the blockers only when it turns on them."""
        states: Blockers = {}
        if eligibility.needs_blockers(task, member, now, renew_own=renew_own):
            states = await self._blocker_states(task, cache)
        return eligibility.claim_verdict(task, member, states, now, renew_own=renew_own)

    async def _settle_expired(self, task: Task, now: datetime) -> Task | None:
        """Write an expired task back (pending or failed); None if someone else changed it first."""
        try:
            return await self._commit(task, rules.expired(task, now))
        except VersionConflict:
            return None

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
        ``guard``, :class:`~.queue.TeamChanged` when the team record moved on."""
        result = limits.text(result, "result")
        data = limits.json_size(data, "data")
        return await self._finish(member, task_id, TaskStatus.COMPLETED, result, data, guard)

    async def fail(
        self, member: str, task_id: str, error: str, *, guard: TeamGuard | None = None
    ) -> Task:
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
    ) -> Task:
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

        if self.queue is None:
            no_guard(guard)
            for _ in range(NATIVE_RETRIES):  # a task without a schema costs no extra read
                try:
                    return await self._update(
                        task_id, lambda t, now: rules.finish(member, *_finish_args(how))(t, now)
                    )
                except ResultUnchecked:
                    await refused(await self._must_load(task_id), self.clock())
            return await self._update(
                task_id, lambda t, now: rules.finish(member, *_finish_args(how))(t, now)
            )
        queue = self.queue
        return await self._native(
            task_id, lambda now: queue.finish(member, task_id, how, now, guard), refused
        )

    async def release(self, member: str, task_id: str) -> Task:
        change = rules.release(member)
        if self.queue is None:
            return await self._update(task_id, change)
        queue = self.queue
        return await self._native(
            task_id, lambda now: queue.release(member, task_id, now), _refused(change)
        )

    async def renew_lease(self, member: str, task_id: str, task_lease: float | None) -> Task:
        """The owner extends its task lease (``task_lease`` seconds from now; None: as before)."""
        lease = None if task_lease is None else limits.lease(task_lease)
        change = rules.renew_lease(member, lease)
        if self.queue is None:
            return await self._update(task_id, change)
        queue = self.queue
        return await self._native(
            task_id, lambda now: queue.renew(member, task_id, lease, now), _refused(change)
        )

    async def cancel(self, actor: str, task_id: str, reason: str) -> Task:
        reason = limits.text(reason, "reason")
        change = rules.cancel(actor, reason)
        if self.queue is None:
            return await self._update(task_id, change)
        queue = self.queue
        return await self._native(
            task_id, lambda now: queue.cancel(actor, task_id, reason, now), _refused(change)
        )

    async def _native(
        self,
        task_id: str,
        call: Callable[[datetime], Awaitable[Outcome]],
        refused: Callable[[Task, datetime], Awaitable[None]],
    ) -> Task:
        """Run one native transition; a refusal raises the Python rule's error for the record the
        queue read (``refused``). Should the rule allow it after all (the record changed in
        between), the transition runs again."""
        limits.name(task_id, "task_id")  # never hand the database a NUL or a lone surrogate
        for _ in range(NATIVE_RETRIES):
            now = self.clock()
            out = await call(now)
            if out.verdict is Verdict.MISSING or out.task is None:
                raise self._missing(task_id)
            if out.verdict is not Verdict.REFUSED:
                return out.task
            await refused(out.task, now)
        raise TeamError(
            f"the native queue refused {task_id!r} {NATIVE_RETRIES} times while the claim rule "
            "allowed it; run the board with AGENTSCOPE_TEAMS_BOARD_NATIVE=0 and report this"
        )

    async def _claim_refused(self, task: Task, member: str, now: datetime) -> None:
        verdict = await self._verdict(task, member, now, {})
        if not verdict.ok:
            raise verdict.error()

    async def reap_expired(self) -> list[Task]:
        """Return every task whose lease expired to pending (or fail it at max_attempts)."""
        if self.queue is not None:
            return await self.queue.reap(self.clock())
        reaped = []
        for task in await self.open_tasks():
            if task.lease_expired(self.clock()):
                settled = await self._settle_expired(task, self.clock())
                if settled is not None:
                    reaped.append(settled)
        return reaped

    async def rebuild_index(self) -> int:
        """Full scan: give every unfinished task its index entries (pending, or held and owned),
        moving in-progress tasks out of the pending index of an older board. Returns the count.
        With a native queue, its index is rebuilt from the records instead."""
        if self.queue is not None:
            return await self._rebuild_queue(self.queue)
        count = 0
        async for page in self._pages(self.keys.tasks_prefix()):
            for key, task in await self._entries(page):
                if isinstance(task, Exception):
                    self._unreadable(self.keys.task_id_of(key), task)  # logged
                elif task is not None and not task.status.finished:
                    if task.status is TaskStatus.IN_PROGRESS:  # re-homed, out of the pending index
                        await self._repair_pending(self.keys.open(task), task)
                    else:
                        await self._put_entry(self.keys.open(task), task)
                    count += 1
        return count

    async def drop_index(self) -> None:
        """Delete the native queue's index, if any (the team's records are being deleted; the
        generic index entries are records under the team's prefix and go with them)."""
        if self.queue is not None:
            await self.queue.drop()

    async def _rebuild_queue(self, queue: BoardQueue) -> int:
        tasks: list[Task] = []
        async for page in self._pages(self.keys.tasks_prefix()):
            for key, task in await self._entries(page):
                if isinstance(task, Exception):
                    self._unreadable(self.keys.task_id_of(key), task)  # logged
                elif task is not None:
                    tasks.append(task)
        await queue.rebuild(tasks)
        return sum(1 for t in tasks if not t.status.finished)


def _finish_args(how: Finish) -> tuple[TaskStatus, str, Any, bool]:
    return how.status, how.text, how.data, how.checked


def _refused(change: Change) -> Callable[[Task, datetime], Awaitable[None]]:
    """The refusal of a native transition: ``change`` raises the rule's error for the record."""

    async def refused(task: Task, now: datetime) -> None:
        change(task, now)

    return refused
