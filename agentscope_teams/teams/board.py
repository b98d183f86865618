"""The task board: tasks as versioned records, every transition one conditional write.

**Transitions.** A task is read, a new record is computed by a pure rule (:mod:`.rules`) and written
with ``put(expected_version=<version read>)``. The task record is the only truth: exactly one of two
racing claimers wins the conditional write; the loser re-reads (named claim: it then sees the winner
and gets :class:`ClaimConflict`) or moves on to another candidate (anonymous claim).

**Finding work without scanning the board.** Each unfinished task has an entry in the *open index*,
``(..., team_id, "open", <seq, 12 digits>, task_id)``. It is written right after the task is created
and deleted after the task reaches a final status (completed, failed, cancelled). Since a final status
never changes again, deleting an entry can never race with a task coming back, so the index needs no
versions of its own. ``claim_next`` pages through the index in task order (oldest first), so its cost
is proportional to the number of unfinished tasks (pending + in progress), never to the board size.
Entries of finished or vanished tasks met on the way are deleted (the index is a hint that may be
slightly stale). After losing a race a claimer shuffles the remaining candidates of its page, so a
herd of claimers spreads out instead of colliding on every task in turn.

The in-progress entries also make lease expiry cheap to find: a claimer that meets a task whose lease
ran out returns it to pending and claims it in the same write (or fails it once ``attempts`` reached
``max_attempts``); :meth:`TaskBoard.reap_expired` does the same sweep without claiming. A crash between
creating a task and writing its index entry leaves a task that only a named claim finds;
:meth:`TaskBoard.rebuild_index` (a full scan, for maintenance) repairs that.

**Time.** Leases use wall-clock UTC (``lease_expires_at``) because claimers run in several processes
and hosts; keep clocks NTP-synchronised and leases much longer than the expected skew.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import datetime

from ..errors import (
    ClaimConflict,
    TaskStateError,
    UnknownTaskError,
    VersionConflict,
)
from ..message import utcnow
from ..store.base import BaseStore, Key
from . import rules
from .models import Task, TaskStatus, TeamKeys
from .rules import Change

PAGE = 64


class TaskBoard:
    """All task operations of one team. Membership is checked by the caller (the team client)."""

    def __init__(
        self, store: BaseStore, keys: TeamKeys, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self.store, self.keys, self.clock = store, keys, clock

    async def load(self, task_id: str) -> Task | None:
        entry = await self.store.get(self.keys.task(task_id))
        return None if entry is None else Task.from_bytes(entry.value, entry.version)

    async def _must_load(self, task_id: str) -> Task:
        task = await self.load(task_id)
        if task is None:
            raise UnknownTaskError(
                f"no task {task_id!r} on team {self.keys.team_id!r}; list the tasks to see their ids"
            )
        return task

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
        lease_seconds: float = 60.0,
    ) -> Task:
        """Create a pending task; every blocker must already exist (so there are no cycles)."""
        blockers = list(dict.fromkeys(blocked_by))
        missing = [b for b in blockers if await self.load(b) is None]
        if missing:
            raise UnknownTaskError(
                f"cannot block on unknown task(s) {', '.join(map(repr, missing))} "
                f"in team {self.keys.team_id!r}; create the blockers first"
            )
        seq = await self.store.append(self.keys.task_seq(), b"task")
        task = rules.created(
            seq,
            actor,
            self.clock(),
            title=title,
            description=description,
            assignee=assignee,
            blocked_by=blockers,
            max_attempts=max_attempts,
            lease_seconds=lease_seconds,
        )
        task = await self._write(task)
        await self.store.put(self.keys.open(task), task.id.encode())
        return task

    async def claim(self, member: str, task_id: str, lease_seconds: float) -> Task:
        """Claim one named task: one winner; the owner claiming again renews its lease."""
        while True:
            task = await self._must_load(task_id)
            now = self.clock()
            if task.status is TaskStatus.IN_PROGRESS and task.owner == member:
                new = rules.renewed(task, now, lease_seconds)
            else:
                new = await self._claim_named(task, member, now, lease_seconds)
            try:
                written = await self._write(new)
            except VersionConflict:
                continue
            if written.status is TaskStatus.FAILED:
                await self._drop_open(written)
                raise TaskStateError(written.error or f"task {task_id!r} failed")
            return written

    async def _claim_named(self, task: Task, member: str, now: datetime, lease: float) -> Task:
        if task.status is TaskStatus.IN_PROGRESS:
            if not task.lease_expired(now):
                raise ClaimConflict(task.id, task.owner)
            task = rules.expired(task, now)
            if task.status is TaskStatus.FAILED:
                return task
        if task.status.finished:
            raise TaskStateError(
                f"task {task.id!r} is already {task.status.value}; it cannot be claimed again"
            )
        if task.assignee not in (None, member):
            raise ClaimConflict(
                task.id,
                None,
                f"task {task.id!r} is assigned to {task.assignee!r}, not {member!r}; "
                "claim another task",
            )
        reason = rules.blocked_reason(task, await self._blocker_states(task, {}))
        if reason:
            raise TaskStateError(f"task {task.id!r} cannot be claimed yet: it is {reason}")
        return rules.claimed(task, member, now, lease)

    async def claim_next(self, member: str, lease_seconds: float) -> Task | None:
        """Claim the oldest claimable task from the open index, or return None when there is none."""
        cache: dict[str, TaskStatus | None] = {}
        after: Key | None = None
        while True:
            page = await self.store.list_keys(self.keys.open_prefix(), limit=PAGE, after=after)
            queue, shuffled = list(page), False
            while queue:
                task, lost = await self._try_candidate(queue.pop(0), member, lease_seconds, cache)
                if task is not None:
                    return task
                if lost and not shuffled:
                    random.shuffle(queue)
                    shuffled = True
            if len(page) < PAGE:
                return None
            after = page[-1]

    async def _try_candidate(
        self, key: Key, member: str, lease: float, cache: dict[str, TaskStatus | None]
    ) -> tuple[Task | None, bool]:
        """Try one index entry: (claimed task or None, whether a race was lost)."""
        task = await self.load(self.keys.task_id_of(key))
        if task is None or task.status.finished:
            await self.store.delete(key)
            return None, False
        now = self.clock()
        if task.status is TaskStatus.IN_PROGRESS:
            if not task.lease_expired(now):
                return None, False
            task = rules.expired(task, now)
            if task.status is TaskStatus.FAILED or task.assignee not in (None, member):
                await self._settle_expired(task)
                return None, False
        elif task.assignee not in (None, member) or rules.blocked_reason(
            task, await self._blocker_states(task, cache)
        ):
            return None, False
        try:
            return await self._write(rules.claimed(task, member, now, lease)), False
        except VersionConflict:
            return None, True

    async def _settle_expired(self, task: Task) -> Task | None:
        """Write an expired task back (pending or failed); None if someone else changed it first."""
        try:
            written = await self._write(task)
        except VersionConflict:
            return None
        await self._drop_open(written)
        return written

    async def _blocker_states(
        self, task: Task, cache: dict[str, TaskStatus | None]
    ) -> dict[str, TaskStatus | None]:
        for b in task.blocked_by:
            if b not in cache:
                found = await self.load(b)
                cache[b] = None if found is None else found.status
        return {b: cache[b] for b in task.blocked_by}

    async def complete(self, member: str, task_id: str, result: str) -> Task:
        task = await self._update(task_id, rules.finish(member, TaskStatus.COMPLETED, result))
        await self._drop_open(task)
        return task

    async def fail(self, member: str, task_id: str, error: str) -> Task:
        task = await self._update(task_id, rules.finish(member, TaskStatus.FAILED, error))
        await self._drop_open(task)
        return task

    async def release(self, member: str, task_id: str) -> Task:
        return await self._update(task_id, rules.release(member))

    async def heartbeat(self, member: str, task_id: str, lease_seconds: float | None) -> Task:
        return await self._update(task_id, rules.heartbeat(member, lease_seconds))

    async def cancel(self, actor: str, task_id: str, reason: str) -> Task:
        task = await self._update(task_id, rules.cancel(actor, reason))
        await self._drop_open(task)
        return task

    async def get(self, task_id: str) -> Task:
        """The task with its computed ``blocked_reason``."""
        task = await self._must_load(task_id)
        reason = rules.blocked_reason(task, await self._blocker_states(task, {}))
        return task.model_copy(update={"blocked_reason": reason})

    async def _scan(self, prefix: Key) -> list[Key]:
        keys: list[Key] = []
        while page := await self.store.list_keys(
            prefix, limit=500, after=keys[-1] if keys else None
        ):
            keys.extend(page)
        return keys

    async def list_tasks(self, status: TaskStatus | None = None) -> list[Task]:
        """Every task (oldest first) with ``blocked_reason`` computed; a full scan of the board."""
        found = [
            await self.load(self.keys.task_id_of(k))
            for k in await self._scan(self.keys.tasks_prefix())
        ]
        tasks = {t.id: t for t in found if t is not None}
        out = []
        for t in sorted(tasks.values(), key=lambda t: t.seq):
            states = {b: (tasks[b].status if b in tasks else None) for b in t.blocked_by}
            t.blocked_reason = rules.blocked_reason(t, states)
            if status is None or t.status is status:
                out.append(t)
        return out

    async def open_tasks(self) -> list[Task]:
        """Unfinished tasks, read through the open index (cleaning stale entries on the way)."""
        out = []
        for key in await self._scan(self.keys.open_prefix()):
            task = await self.load(self.keys.task_id_of(key))
            if task is None or task.status.finished:
                await self.store.delete(key)
            else:
                out.append(task)
        return out

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
            task = await self.load(self.keys.task_id_of(key))
            if task is not None and not task.status.finished:
                await self.store.put(self.keys.open(task), task.id.encode())
                count += 1
        return count
