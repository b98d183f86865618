"""The task board: tasks as versioned records, every transition one conditional write.

**Transitions.** A task is read, the new record is computed by a pure rule (:mod:`.rules`; who may
claim is :func:`~.eligibility.claim_verdict`) and written with ``put(expected_version=<version
read>)``. Of two racing claimers exactly one wins; the loser re-reads (a named claim then gets
:class:`ClaimConflict`) or moves on to another candidate (an anonymous claim).

**The open index.** Each unfinished task has an entry ``(..., team_id, "open", <seq12>, task_id)``,
written right after the task is created and deleted once it is finished (a final status never
changes, so the index needs no versions). What looks for work reads it, never the whole board:
``claim_next`` pages through it oldest first and stops at the first claimable task; with
``prefer_own`` (the ``claimTask`` tool) it first reads every unfinished task, and so does
:meth:`TaskBoard.open_board` (the member runtime's poll). Their cost grows with the unfinished tasks
(and the finished tasks pending ones wait on), never with the board's history. Stale entries met on
the way are deleted. After losing a race a claimer shuffles the rest of its page.

A claim that meets an expired lease returns the task to pending and claims it in the same write (or
fails it at ``max_attempts``); :meth:`TaskBoard.reap_expired` sweeps without claiming. A task whose
index entry a crash lost is found only by a named claim until :meth:`TaskBoard.rebuild_index` (a
full scan) repairs the index. Leases use wall-clock UTC, since claimers run in several processes and
hosts: keep clocks NTP-synchronised and leases much longer than the expected skew.

The reads, and how they treat a task record that cannot be decoded, are
:class:`~.board_reads.BoardReads`; the bounds of every input, :mod:`.limits`.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Sequence
from datetime import datetime

from ..errors import TeamError, UnknownTaskError, VersionConflict
from ..sessions.listing import UNREADABLE
from ..store.base import Key
from . import eligibility, limits, rules
from .board_reads import Blockers, BoardReads
from .eligibility import ClaimOutcome, ClaimVerdict, claimed_record
from .models import Task, TaskStatus
from .rules import Change

PAGE = 64


class TaskBoard(BoardReads):
    """All task operations of one team. Membership is checked by the caller (the team client);
    the reads (``load``, ``get``, ``list_tasks``, ``open_tasks``, ``open_board``) are
    :class:`~.board_reads.BoardReads`."""

    async def _write(self, task: Task) -> Task:
        key = self.keys.task(task.id)
        version = await self.store.put(key, task.to_bytes(), expected_version=task.version)
        return task.model_copy(update={"version": version})

    async def _update(self, task_id: str, change: Change) -> Task:
        """Read-modify-write until the conditional write wins or ``change`` refuses (raises)."""
        while True:
            task = await self._must_load(task_id)
            new = change(task, self.clock())
            if new is None:
                return task
            try:
                return await self._write(new)
            except VersionConflict:
                continue

    async def _drop_open(self, task: Task) -> None:
        if task.status.finished:
            await self.store.delete(self.keys.open(task))

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
    ) -> Task:
        """Create a pending task; every blocker must already exist (so there are no cycles).

        Every field is checked against :mod:`.limits` before anything is written.
        """
        fields = {
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
        task = await self._write(task)
        await self.store.put(self.keys.open(task), task.id.encode())
        return task

    async def claim(self, member: str, task_id: str, task_lease: float) -> Task:
        """Claim one named task: one winner; the owner claiming again renews its lease."""
        task_lease = limits.lease(task_lease)
        while True:
            task = await self._must_load(task_id)
            now = self.clock()
            verdict = await self._verdict(task, member, now, {})
            exhausted = verdict.outcome is ClaimOutcome.EXHAUSTED  # record the failure first
            if exhausted and await self._settle_expired(rules.expired(task, now)) is None:
                continue
            if not verdict.ok:
                raise verdict.error()
            try:
                return await self._write(claimed_record(verdict, task, member, now, task_lease))
            except VersionConflict:
                continue

    async def claim_next(
        self, member: str, task_lease: float, *, prefer_own: bool = False
    ) -> Task | None:
        """Claim the oldest claimable task from the open index, or return None when there is none.

        With ``prefer_own``, a task ``member`` holds already (its process died, or the reply to its
        claim was lost) comes first: the oldest is returned with its lease renewed.
        """
        task_lease = limits.lease(task_lease)
        for held in await self.open_tasks() if prefer_own else ():
            if eligibility.holds(held, member):
                with contextlib.suppress(TeamError):  # taken over or finished meanwhile
                    return await self.claim(member, held.id, task_lease)
        cache: Blockers = {}
        after: Key | None = None
        while True:
            page = await self.store.list_keys(self.keys.open_prefix(), limit=PAGE, after=after)
            queue, shuffled = list(page), False
            while queue:
                task, lost = await self._try_candidate(queue.pop(0), member, task_lease, cache)
                if task is not None:
                    return task
                if lost and not shuffled:
                    random.shuffle(queue)
                    shuffled = True
            if len(page) < PAGE:
                return None
            after = page[-1]

    async def _try_candidate(
        self, key: Key, member: str, lease: float, cache: Blockers
    ) -> tuple[Task | None, bool]:
        """Try one index entry: (claimed task or None, whether a race was lost)."""
        try:
            task = await self.load(self.keys.task_id_of(key))
        except UNREADABLE:  # passed by (and kept in the index); listings report it
            return None, False
        if task is None or task.status.finished:
            await self.store.delete(key)
            return None, False
        now = self.clock()
        verdict = await self._verdict(task, member, now, cache, renew_own=False)
        if not verdict.ok:
            if verdict.lease_expired:
                await self._settle_expired(rules.expired(task, now))
            return None, False
        try:
            return await self._write(claimed_record(verdict, task, member, now, lease)), False
        except VersionConflict:
            return None, True

    async def _verdict(
        self, task: Task, member: str, now: datetime, cache: Blockers, renew_own: bool = True
    ) -> ClaimVerdict:
        """The claim rule's verdict, reading the blockers only when it turns on them."""
        states: Blockers = {}
        if eligibility.needs_blockers(task, member, now, renew_own=renew_own):
            states = await self._blocker_states(task, cache)
        return eligibility.claim_verdict(task, member, states, now, renew_own=renew_own)

    async def _settle_expired(self, task: Task) -> Task | None:
        """Write an expired task back (pending or failed); None if someone else changed it first."""
        try:
            written = await self._write(task)
        except VersionConflict:
            return None
        await self._drop_open(written)
        return written

    async def complete(self, member: str, task_id: str, result: str) -> Task:
        result = limits.text(result, "result")
        task = await self._update(task_id, rules.finish(member, TaskStatus.COMPLETED, result))
        await self._drop_open(task)
        return task

    async def fail(self, member: str, task_id: str, error: str) -> Task:
        error = limits.text(error, "error")
        task = await self._update(task_id, rules.finish(member, TaskStatus.FAILED, error))
        await self._drop_open(task)
        return task

    async def release(self, member: str, task_id: str) -> Task:
        return await self._update(task_id, rules.release(member))

    async def renew_lease(self, member: str, task_id: str, task_lease: float | None) -> Task:
        """The owner extends its task lease (``task_lease`` seconds from now; None: as before)."""
        task_lease = None if task_lease is None else limits.lease(task_lease)
        return await self._update(task_id, rules.renew_lease(member, task_lease))

    async def cancel(self, actor: str, task_id: str, reason: str) -> Task:
        reason = limits.text(reason, "reason")
        task = await self._update(task_id, rules.cancel(actor, reason))
        await self._drop_open(task)
        return task

    async def reap_expired(self) -> list[Task]:
        """Return every task whose lease expired to pending (or fail it at max_attempts)."""
        reaped = []
        for task in await self.open_tasks():
            if task.lease_expired(self.clock()):
                settled = await self._settle_expired(rules.expired(task, self.clock()))
                if settled is not None:
                    reaped.append(settled)
        return reaped

    async def rebuild_index(self) -> int:
        """Full scan: make sure every unfinished task has an open-index entry. Returns the count."""
        count = 0
        for key in await self._scan(self.keys.tasks_prefix()):
            try:
                task = await self.load(self.keys.task_id_of(key))
            except UNREADABLE as exc:
                self._unreadable(self.keys.task_id_of(key), exc)  # logged
                continue
            if task is not None and not task.status.finished:
                await self.store.put(self.keys.open(task), task.id.encode())
                count += 1
        return count
