"""The board's task indexes: which entries each task record calls for, and their repair.

Three key families of the team's group (:mod:`agentscope_teams.keys`) point at task records; the
record stays the single truth and an entry is only a hint, checked against the record it names:

* **pending** (``open``, by sequence): every pending task, the claim candidates, oldest first;
* **held** (by lease expiry, in ms): every in-progress task, earliest expiry first. The expiry an
  entry records is at most the task's real one: a renewal that extends the lease (a heartbeat)
  leaves the entry alone; a reader that meets an entry whose time has passed while the lease is
  still live moves it to the real expiry. So a claim finds expired leases with one bounded read;
* **owned** (by member, then sequence): each member's in-progress tasks, for ``prefer_own``.

Every transition writes the task, then the entries its new state calls for, then deletes the ones
its old state had (:meth:`BoardIndex._moved`): a crash in between leaves a stale entry, never a
missing one. Stale entries are cleaned by whoever meets them; one of a finished or deleted task is
deleted at once (a final state never changes), others are first re-homed and then the task is
read again (:meth:`BoardIndex._repair_pending`), so a concurrent transition is never lost. A claim
deletes the task's pending entry right after winning; should that delete run late (after the lease
could have run out and the task gone back to pending), the claimer reads the task again and puts
the entry back.

**Boards written before the split** have one ``open`` index of every unfinished task. They keep
working: a claimer meeting an in-progress task there moves it to the held and owned indexes (and
claims it if its lease ran out), and :meth:`~..board.TaskBoard.rebuild_index` migrates the whole
board at once. Until a task is moved, ``prefer_own`` cannot find it by owner (its lease expiry
still returns it to the board).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ...store.base import Key
from ..rules.models import Task, TaskStatus
from .records import Read, TaskRecords

#: Entries of the held index one claim reads (the earliest expiries) looking for expired leases.
HELD_PAGE = 8


def _renewal(old: Task, new: Task) -> bool:
    """The same holder and attempt, the lease moved: a renewal, not a new claim."""
    return (
        old.status is new.status is TaskStatus.IN_PROGRESS
        and old.owner == new.owner
        and old.attempts == new.attempts
    )


class BoardIndex(TaskRecords):
    """Index maintenance of one team's board on the generic queue (:class:`~.store.StoreQueue`)."""

    def _wanted(self, task: Task | None) -> list[Key]:
        """The index entries ``task`` in its state calls for."""
        if task is None:
            return []
        if task.status is TaskStatus.PENDING:
            return [self.keys.open(task)]
        if task.status is TaskStatus.IN_PROGRESS:
            out = [self.keys.owned(task.owner, task)] if task.owner else []
            expires = task.lease_expires_at
            return out + ([self.keys.held(task.id, expires)] if expires else [])
        return []

    async def _put_entry(self, key: Key, task: Task) -> None:
        await self.store.put(key, task.id.encode())

    async def _moved(self, old: Task | None, new: Task) -> None:
        """Bring the indexes in step with the transition ``old`` -> ``new`` (already written)."""
        if old is not None and _renewal(old, new):
            was, until = old.lease_expires_at, new.lease_expires_at
            if was is not None and until is not None and until < was:  # an earlier expiry
                await self._put_entry(self.keys.held(new.id, until), new)
            return
        had, want = self._wanted(old), self._wanted(new)
        for key in want:
            if key not in had:
                await self._put_entry(key, new)
        for key in had:
            if key not in want:
                await self.store.delete(key)
        if old is not None and old.status is TaskStatus.PENDING and self._late(new):
            await self._recheck(new.id)

    def _late(self, claimed: Task) -> bool:
        """Whether the claim's own index writes ended late enough that the lease may have lapsed."""
        if claimed.status is not TaskStatus.IN_PROGRESS or claimed.lease_expires_at is None:
            return False
        half = timedelta(seconds=claimed.lease_seconds / 2)
        return self.clock() >= claimed.lease_expires_at - half

    async def _recheck(self, task_id: str) -> None:
        """After deleting a task's pending entry: put it back if the task is pending again."""
        (task,) = await self.load_many([task_id])
        if isinstance(task, Task) and task.status is TaskStatus.PENDING:
            await self._put_entry(self.keys.open(task), task)

    async def _repair_pending(self, key: Key, task: Read) -> None:
        """A pending-index entry whose task is not pending: delete it, re-homing the task."""
        if isinstance(task, Exception) or (task is not None and task.status is TaskStatus.PENDING):
            return
        for wanted in self._wanted(task):  # in progress (an older board, or a stale entry)
            assert task is not None
            await self._put_entry(wanted, task)
        await self.store.delete(key)
        if task is not None and not task.status.finished:
            await self._recheck(task.id)

    async def _repair_held(self, key: Key, task: Read, now: datetime) -> bool:
        """A held-index entry whose recorded expiry has passed; True if its lease really expired
        (a claim candidate). Otherwise the entry is re-homed (or dropped) and False returned."""
        if isinstance(task, Exception):
            return False
        if task is not None and task.status is TaskStatus.IN_PROGRESS:
            if task.lease_expired(now):
                return True
            wanted = self._wanted(task)
            if key in wanted:
                return False
            for entry in wanted:
                await self._put_entry(entry, task)
        elif task is not None and task.status is TaskStatus.PENDING:
            await self._put_entry(self.keys.open(task), task)
        await self.store.delete(key)
        return False

    async def _lapsed(self, now: datetime) -> list[tuple[Key, Read]]:
        """The first held-index entries whose recorded expiry has passed, with their tasks."""
        page = await self.store.list_keys(self.keys.held_prefix(), limit=HELD_PAGE)
        lapsed = [k for k in page if self.keys.expiry_of(k) <= now]
        return await self._entries(lapsed) if lapsed else []

    async def _owned(self, member: str) -> list[Task]:
        """``member``'s in-progress tasks (oldest first), from the owned index; entries of tasks
        finished, deleted or held by someone else are dropped."""
        out: list[Task] = []
        for page in [p async for p in self._pages(self.keys.owned_prefix(member))]:
            for key, task in await self._entries(page):
                if isinstance(task, Exception):
                    continue
                if task is not None and task.status is TaskStatus.IN_PROGRESS:
                    if task.owner == member:
                        out.append(task)
                        continue
                elif task is not None and not task.status.finished:
                    continue  # pending again: its releaser deletes the entry
                await self.store.delete(key)
        return sorted(out, key=lambda t: t.seq)
