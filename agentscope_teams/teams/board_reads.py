"""What the task board reads: one task, the open index, the whole board (see :mod:`.board`).

**Unreadable tasks.** A task record that cannot be decoded (corrupt, or written by a newer version)
never hides the others: the listings (:meth:`BoardReads.list_tasks`, :meth:`~BoardReads.open_tasks`,
:meth:`~BoardReads.open_board`) leave it out and name it in their ``problems``
(:class:`~agentscope_teams.sessions.Listing`); a claim looking for work passes it by, and its
open-index entry is kept, so once repaired it is found again. Reading it by id raises. A task
waiting on an unreadable task counts it as unfinished.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ..errors import UnknownTaskError
from ..message import utcnow
from ..sessions.listing import UNREADABLE, Listing, Unreadable, unreadable
from ..store.base import BaseStore, Key
from .eligibility import blocked_reason
from .models import Task, TaskStatus, TeamKeys

Blockers = dict[str, TaskStatus | None]


class BoardReads:
    """The reads of one team's board; :class:`~.board.TaskBoard` adds the transitions."""

    def __init__(
        self, store: BaseStore, keys: TeamKeys, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self.store, self.keys, self.clock = store, keys, clock

    async def load(self, task_id: str) -> Task | None:
        """The task, or None; an undecodable record raises (``UNREADABLE``)."""
        entry = await self.store.get(self.keys.task(task_id))
        return None if entry is None else Task.from_bytes(entry.value, entry.version)

    async def _must_load(self, task_id: str) -> Task:
        task = await self.load(task_id)
        if task is None:
            raise UnknownTaskError(
                f"no task {task_id!r} on team {self.keys.team_id!r}; list the tasks to see their ids"
            )
        return task

    def _unreadable(self, task_id: str, exc: Exception) -> Unreadable:
        return unreadable("task", task_id, self.keys.task(task_id), exc)

    async def _status(self, task_id: str) -> tuple[Task | None, TaskStatus | None]:
        """A blocker as read, and the status it counts with (None: deleted; unreadable: pending)."""
        try:
            found = await self.load(task_id)
        except UNREADABLE:
            return None, TaskStatus.PENDING
        return found, None if found is None else found.status

    async def _blocker_states(self, task: Task, cache: Blockers) -> Blockers:
        for b in task.blocked_by:
            if b not in cache:
                cache[b] = (await self._status(b))[1]
        return {b: cache[b] for b in task.blocked_by}

    async def get(self, task_id: str) -> Task:
        """The task with its computed ``blocked_reason``."""
        task = await self._must_load(task_id)
        reason = blocked_reason(task, await self._blocker_states(task, {}))
        return task.model_copy(update={"blocked_reason": reason})

    async def _scan(self, prefix: Key) -> list[Key]:
        keys: list[Key] = []
        while page := await self.store.list_keys(
            prefix, limit=500, after=keys[-1] if keys else None
        ):
            keys.extend(page)
        return keys

    async def list_tasks(self, status: TaskStatus | None = None) -> Listing[Task]:
        """Every task (oldest first) with ``blocked_reason`` computed; a full scan of the board."""
        tasks: dict[str, Task] = {}
        problems: list[Unreadable] = []
        for key in await self._scan(self.keys.tasks_prefix()):
            task_id = self.keys.task_id_of(key)
            try:
                found = await self.load(task_id)
            except UNREADABLE as exc:
                problems.append(self._unreadable(task_id, exc))
                continue
            if found is not None:
                tasks[found.id] = found
        unread = {p.id for p in problems}
        out = []
        for t in sorted(tasks.values(), key=lambda t: t.seq):
            states: Blockers = {
                b: tasks[b].status if b in tasks else TaskStatus.PENDING if b in unread else None
                for b in t.blocked_by
            }
            t.blocked_reason = blocked_reason(t, states)
            if status is None or t.status is status:
                out.append(t)
        return Listing(out, problems)

    async def open_tasks(self) -> Listing[Task]:
        """Unfinished tasks, read through the open index (cleaning stale entries on the way)."""
        out: list[Task] = []
        problems: list[Unreadable] = []
        for key in await self._scan(self.keys.open_prefix()):
            task_id = self.keys.task_id_of(key)
            try:
                task = await self.load(task_id)
            except UNREADABLE as exc:  # kept in the index: found again once repaired
                problems.append(self._unreadable(task_id, exc))
                continue
            if task is None or task.status.finished:
                await self.store.delete(key)
            else:
                out.append(task)
        return Listing(out, problems)

    async def open_board(self) -> Listing[Task]:
        """Unfinished tasks (oldest first, with ``blocked_reason``), then the finished tasks pending
        ones wait on: what judging claims needs (:mod:`.eligibility`), without a scan of the board."""
        tasks = await self.open_tasks()
        states: Blockers = {t.id: t.status for t in tasks}
        states.update(dict.fromkeys((p.id for p in tasks.problems), TaskStatus.PENDING))
        waited_on: list[Task] = []
        for t in tasks:
            for b in t.blocked_by if t.status is TaskStatus.PENDING else ():
                if b not in states:
                    found, states[b] = await self._status(b)
                    waited_on += [found] if found is not None else []
            t.blocked_reason = blocked_reason(t, {b: states.get(b) for b in t.blocked_by})
        return Listing([*tasks, *sorted(waited_on, key=lambda t: t.seq)], tasks.problems)
