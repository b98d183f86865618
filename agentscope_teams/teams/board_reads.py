"""What the task board reads: one task, the unfinished tasks, the whole board (see :mod:`.board`).

Listings read in pages (:class:`~.queues.records.TaskRecords`): one ``list_keys`` page and one
batched read (``get_many``, one round trip on Redis and SQL) per page, so listing 10,000 tasks is
about 20 store calls, not 10,000.

**Unreadable tasks.** A task record that cannot be decoded (corrupt, or written by a newer version)
never hides the others: the listings (:meth:`BoardReads.list_tasks`, :meth:`~BoardReads.open_tasks`,
:meth:`~BoardReads.open_board`) leave it out and name it in their ``problems``
(:class:`~agentscope_teams.sessions.Listing`); a claim looking for work passes it by, and its
index entries are kept, so once repaired it is found again. Reading it by id raises. A task
waiting on an unreadable task counts it as unfinished.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ..listing import Listing, Unreadable
from ..message import utcnow
from ..store.base import BaseStore
from .queues.base import BoardQueue
from .queues.factory import board_queue_of
from .queues.records import Blockers, TaskRecords
from .rules.eligibility import blocked_reason
from .rules.models import Task, TaskStatus, TeamKeys


class BoardReads(TaskRecords):
    """The reads of one team's board; :class:`~.board.TaskBoard` adds the transitions."""

    def __init__(
        self,
        store: BaseStore,
        keys: TeamKeys,
        clock: Callable[[], datetime] = utcnow,
        *,
        native: bool | None = None,
    ) -> None:
        super().__init__(store, keys, clock)
        #: The board's queue (:mod:`.queues`): the store's native one, or the generic one.
        #: ``native=False`` forces the generic queue; None follows ``AGENTSCOPE_TEAMS_BOARD_NATIVE``.
        self.queue: BoardQueue = board_queue_of(store, keys, clock, native=native)

    async def get(self, task_id: str) -> Task:
        """The task with its computed ``blocked_reason``."""
        task = await self._must_load(task_id)
        reason = blocked_reason(task, await self._blocker_states(task, {}))
        return task.model_copy(update={"blocked_reason": reason})

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
        """Unfinished tasks (oldest first), read through the queue's index (the generic queue
        deletes entries of finished or deleted tasks it meets on the way)."""
        found: dict[str, Task] = {}
        problems: dict[str, Unreadable] = {}
        for task_id, task in await self.queue.open_tasks():
            if isinstance(task, Exception):
                problems[task_id] = self._unreadable(task_id, task)
            elif not task.status.finished:
                found[task.id] = task
        out = sorted(found.values(), key=lambda t: t.seq)
        return Listing(out, list(problems.values()))

    async def open_board(self) -> Listing[Task]:
        """Unfinished tasks (oldest first, with ``blocked_reason``), then the finished tasks pending
        ones wait on: what judging claims needs (:mod:`.rules.eligibility`), without a scan of the board."""
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
