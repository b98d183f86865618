"""What the task board reads: one task, the task indexes, the whole board (see :mod:`.board`).

Listings read in pages: one ``list_keys`` page and one batched read (``get_many``, one round trip
on Redis and SQL) per page, so listing 10,000 tasks is about 20 store calls, not 10,000.

**Unreadable tasks.** A task record that cannot be decoded (corrupt, or written by a newer version)
never hides the others: the listings (:meth:`BoardReads.list_tasks`, :meth:`~BoardReads.open_tasks`,
:meth:`~BoardReads.open_board`) leave it out and name it in their ``problems``
(:class:`~agentscope_teams.sessions.Listing`); a claim looking for work passes it by, and its
index entries are kept, so once repaired it is found again. Reading it by id raises. A task
waiting on an unreadable task counts it as unfinished.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime

from ..errors import UnknownTaskError
from ..listing import UNREADABLE, Listing, Unreadable, unreadable
from ..message import utcnow
from ..store.base import BaseStore, Entry, Key, get_many
from .queues.base import BoardQueue, board_queue_of, native_wanted
from .rules import limits
from .rules.eligibility import blocked_reason
from .rules.models import Task, TaskStatus, TeamKeys

Blockers = dict[str, TaskStatus | None]
#: Keys per listing page (one ``list_keys`` and one ``get_many`` each).
LIST_PAGE = 1000
#: A task as read by a batched read: the task, None (absent), or why it cannot be decoded.
Read = Task | None | Exception


class BoardReads:
    """The reads of one team's board; :class:`~.board.TaskBoard` adds the transitions."""

    def __init__(
        self,
        store: BaseStore,
        keys: TeamKeys,
        clock: Callable[[], datetime] = utcnow,
        *,
        native: bool | None = None,
    ) -> None:
        self.store, self.keys, self.clock = store, keys, clock
        #: The store's native queue (:mod:`.queue`), or None: the generic path. ``native=False``
        #: forces the generic path; None follows ``AGENTSCOPE_TEAMS_BOARD_NATIVE`` (default on).
        self.queue = board_queue_of(store, keys) if native_wanted(native) else None

    async def load(self, task_id: str) -> Task | None:
        """The task, or None; an undecodable record raises (``UNREADABLE``)."""
        entry = await self.store.get(self.keys.task(task_id))
        return None if entry is None else Task.from_bytes(entry.value, entry.version)

    async def load_many(self, task_ids: Sequence[str]) -> list[Read]:
        """The tasks of ``task_ids`` in one batched read; an undecodable one is its exception."""
        entries = await get_many(self.store, [self.keys.task(t) for t in task_ids])
        return [_decode(e) for e in entries]

    async def _must_load(self, task_id: str) -> Task:
        task = await self.load(limits.name(task_id, "task_id"))
        if task is None:
            raise self._missing(task_id)
        return task

    def _missing(self, task_id: str) -> UnknownTaskError:
        return UnknownTaskError(
            f"no task {task_id!r} on team {self.keys.team_id!r}; list the tasks to see their ids"
        )

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

    async def _pages(self, prefix: Key, size: int = LIST_PAGE) -> AsyncIterator[list[Key]]:
        """The keys under ``prefix``, a page (one ``list_keys``) at a time."""
        after: Key | None = None
        while page := await self.store.list_keys(prefix, limit=size, after=after):
            yield page
            if len(page) < size:
                return
            after = page[-1]

    async def _scan(self, prefix: Key) -> list[Key]:
        return [key async for page in self._pages(prefix) for key in page]

    async def _entries(self, keys: Sequence[Key]) -> list[tuple[Key, Read]]:
        """Each index (or task) key with its task, read in one batch."""
        reads = await self.load_many([self.keys.task_id_of(k) for k in keys])
        return list(zip(keys, reads, strict=True))

    async def list_tasks(self, status: TaskStatus | None = None) -> Listing[Task]:
        """Every task (oldest first) with ``blocked_reason`` computed; the whole board, read a page
        (one ``list_keys`` and one ``get_many``) at a time."""
        tasks: dict[str, Task] = {}
        problems: list[Unreadable] = []
        async for page in self._pages(self.keys.tasks_prefix()):
            for key, found in await self._entries(page):
                if isinstance(found, Exception):
                    problems.append(self._unreadable(self.keys.task_id_of(key), found))
                elif found is not None:
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
        """Unfinished tasks (oldest first), read through the pending and in-progress indexes; entries
        of finished or deleted tasks met on the way are deleted."""
        if self.queue is not None:
            return await self._queued_open_tasks(self.queue)
        found: dict[str, Task] = {}
        problems: dict[str, Unreadable] = {}
        for prefix in (self.keys.open_prefix(), self.keys.held_prefix()):
            async for page in self._pages(prefix):
                for key, task in await self._entries(page):
                    task_id = self.keys.task_id_of(key)
                    if isinstance(task, Exception):  # kept in the index: found once repaired
                        problems[task_id] = self._unreadable(task_id, task)
                    elif task is None or task.status.finished:
                        await self.store.delete(key)  # a final state: the entry is stale for good
                    else:
                        found[task.id] = task
        out = sorted(found.values(), key=lambda t: t.seq)
        return Listing(out, list(problems.values()))

    async def _queued_open_tasks(self, queue: BoardQueue) -> Listing[Task]:
        found: dict[str, Task] = {}
        problems: dict[str, Unreadable] = {}
        for task_id, task in await queue.open_tasks():
            if isinstance(task, Exception):
                problems[task_id] = self._unreadable(task_id, task)
            elif not task.status.finished:
                found[task.id] = task
        out = sorted(found.values(), key=lambda t: t.seq)
        return Listing(out, list(problems.values()))

    async def open_board(self) -> Listing[Task]:
        """Unfinished tasks (oldest first, with ``blocked_reason``), then the finished tasks pending
        ones wait on: what judging claims needs (:mod:`.eligibility`), without a scan of the board."""
        tasks = await self.open_tasks()
        states: Blockers = {t.id: t.status for t in tasks}
        states.update(dict.fromkeys((p.id for p in tasks.problems), TaskStatus.PENDING))
        wanted = [
            b
            for t in tasks
            if t.status is TaskStatus.PENDING
            for b in t.blocked_by
            if b not in states
        ]
        waited_on: list[Task] = []
        ids = list(dict.fromkeys(wanted))
        for task_id, read in zip(ids, await self.load_many(ids), strict=True):
            if isinstance(read, Exception):
                states[task_id] = TaskStatus.PENDING
            else:
                states[task_id] = None if read is None else read.status
                waited_on += [read] if read is not None else []
        for t in tasks:
            t.blocked_reason = blocked_reason(t, {b: states.get(b) for b in t.blocked_by})
        return Listing([*tasks, *sorted(waited_on, key=lambda t: t.seq)], tasks.problems)


def _decode(entry: Entry | None) -> Read:
    if entry is None:
        return None
    try:
        return Task.from_bytes(entry.value, entry.version)
    except UNREADABLE as exc:
        return exc
