"""The generic queue: the board over any :class:`~agentscope_teams.store.base.BaseStore`.

**Transitions.** A task is read, the new record is computed by a pure rule
(:mod:`..rules.transitions`; who may claim is :func:`~..rules.eligibility.claim_verdict`) and
written with ``put(expected_version=<version read>)``. Of two racing claimers exactly one wins; the
loser re-reads (a named claim then gets :class:`~agentscope_teams.errors.ClaimConflict` from the
board) or moves on to another candidate (an anonymous claim). A refusal comes back as
:data:`~.base.Verdict.REFUSED` with the record as read, as from a native queue.

**Finding work.** ``claim_next`` reads the task indexes (:mod:`.store_index`), never the whole
board: first the few in-progress entries whose recorded expiry has passed (a bounded read: expired
leases are reclaimed first), then the pending index oldest first, a small batch of tasks per round
trip, stopping at the first claimable task; with ``prefer_own`` (the ``claimTask`` tool) it first
reads the member's own in-progress tasks. A claim's cost does not grow with how many tasks other
members hold, nor with the board's history. After losing a race a claimer shuffles the rest of its
page. A claim that meets an expired lease returns the task to pending and claims it in the same
write (or fails it at ``max_attempts``).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Sequence
from datetime import datetime

from ... import tracing
from ...errors import TeamError, VersionConflict
from ...store.base import Key
from ..rules import transitions as rules
from ..rules.eligibility import ClaimOutcome, claimed_record
from ..rules.models import Task, TaskStatus
from .base import Outcome, RuleTransitions, TeamGuard, Verdict, no_guard
from .records import Blockers, Read
from .store_index import BoardIndex

PAGE = 64
#: Pending candidates read per batched round trip while looking for work.
BATCH = 8


class StoreQueue(RuleTransitions, BoardIndex):
    """The queue of one team's board as conditional writes over the store's ``get`` / ``put`` /
    ``list_keys`` (see the module docs); every backend has it."""

    guards_team = False
    native = False

    async def _commit(self, old: Task, new: Task) -> Task:
        """Write ``new`` over ``old`` (conditional on its version), then update the indexes."""
        written = await self._write(new)
        await self._moved(old, written)
        return written

    async def _changed(self, task_id: str, change: rules.Change, now: datetime) -> Outcome:
        """Read-modify-write until the conditional write wins or ``change`` refuses."""
        while True:
            task = await self.load(task_id)
            if task is None:
                return Outcome(Verdict.MISSING)
            try:
                new = change(task, now)
            except TeamError:
                return Outcome(Verdict.REFUSED, task)
            if new is None:
                return Outcome(Verdict.UNCHANGED, task)
            try:
                return Outcome(Verdict.DONE, await self._commit(task, new))
            except VersionConflict as exc:
                tracing.conflict(exc.key)

    async def enqueue(self, task: Task) -> None:
        await self._moved(None, task)

    async def claim(self, member: str, task_id: str, lease: float, now: datetime) -> Outcome:
        while True:
            task = await self.load(task_id)
            if task is None:
                return Outcome(Verdict.MISSING)
            verdict = await self._verdict(task, member, now, {})
            exhausted = verdict.outcome is ClaimOutcome.EXHAUSTED  # record the failure first
            if exhausted and await self._settle_expired(task, now) is None:
                continue
            if not verdict.ok:
                return Outcome(Verdict.REFUSED, task)
            try:
                new = claimed_record(verdict, task, member, now, lease)
                return Outcome(Verdict.DONE, await self._commit(task, new))
            except VersionConflict as exc:
                tracing.conflict(exc.key)

    async def claim_next(
        self,
        member: str,
        lease: float,
        now: datetime,
        *,
        prefer_own: bool,
        guard: TeamGuard | None = None,
    ) -> Task | None:
        no_guard(guard)
        for held in await self._owned(member) if prefer_own else ():
            with contextlib.suppress(TeamError):  # taken over or finished meanwhile
                out = await self.claim(member, held.id, lease, self.clock())
                if out.verdict is Verdict.DONE:
                    return out.task
        cache: Blockers = {}
        for key, task in await self._lapsed(self.clock()):
            if await self._repair_held(key, task, self.clock()):
                assert isinstance(task, Task)
                claimed, _ = await self._attempt(task, member, lease, cache)
                if claimed is not None:
                    return claimed
        async for page in self._pages(self.keys.open_prefix(), PAGE):
            claimed = await self._claim_from(page, member, lease, cache)
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

    async def _settle_expired(self, task: Task, now: datetime) -> Task | None:
        """Write an expired task back (pending or failed); None if someone else changed it first."""
        try:
            return await self._commit(task, rules.expired(task, now))
        except VersionConflict:
            return None

    async def reap(self, now: datetime) -> list[Task]:
        reaped = []
        for _, task in await self.open_tasks():
            if isinstance(task, Task) and task.lease_expired(self.clock()):
                settled = await self._settle_expired(task, self.clock())
                if settled is not None:
                    reaped.append(settled)
        return reaped

    async def open_tasks(self) -> list[tuple[str, Task | Exception]]:
        """Through the pending and in-progress indexes; entries of finished or deleted tasks met
        on the way are deleted (a task in both indexes comes twice)."""
        out: list[tuple[str, Task | Exception]] = []
        for prefix in (self.keys.open_prefix(), self.keys.held_prefix()):
            async for page in self._pages(prefix):
                for key, task in await self._entries(page):
                    if isinstance(task, Exception):  # kept in the index: found once repaired
                        out.append((self.keys.task_id_of(key), task))
                    elif task is None or task.status.finished:
                        await self.store.delete(key)  # a final state: the entry is stale for good
                    else:
                        out.append((task.id, task))
        return out

    async def rebuild(self, tasks: Sequence[Task]) -> None:
        """Give every unfinished task its index entries (pending, or held and owned), moving
        in-progress tasks out of the pending index of an older board."""
        for task in tasks:
            if task.status is TaskStatus.IN_PROGRESS:  # re-homed, out of the pending index
                await self._repair_pending(self.keys.open(task), task)
            elif not task.status.finished:
                await self._put_entry(self.keys.open(task), task)

    async def drop(self) -> None:
        """Nothing to do: the index entries are records under the team's prefix."""
