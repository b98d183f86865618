"""One team's task records over the store: read one, read a batch, page through a prefix, write.

Shared by the board's reads (:class:`~..board_reads.BoardReads`) and the generic queue
(:class:`~.store.StoreQueue`). Listings read in pages: one ``list_keys`` page and one batched read
(``get_many``, one round trip on Redis and SQL) per page, so reading 10,000 tasks is about 20 store
calls, not 10,000. A record that cannot be decoded comes back from a batched read as its exception
(:data:`Read`); reading it by id raises.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime

from ...errors import UnknownTaskError
from ...listing import UNREADABLE, Unreadable, unreadable
from ...message import utcnow
from ...store.base import BaseStore, Entry, Key, get_many
from ..rules import eligibility, limits
from ..rules.eligibility import ClaimVerdict
from ..rules.models import Task, TaskStatus, TeamKeys

Blockers = dict[str, TaskStatus | None]
#: Keys per listing page (one ``list_keys`` and one ``get_many`` each).
LIST_PAGE = 1000
#: A task as read by a batched read: the task, None (absent), or why it cannot be decoded.
Read = Task | None | Exception


class TaskRecords:
    """The task records of one team: ``store`` and ``keys``, judged by ``clock`` (wall-clock UTC)."""

    def __init__(
        self, store: BaseStore, keys: TeamKeys, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self.store, self.keys, self.clock = store, keys, clock

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

    async def _write(self, task: Task) -> Task:
        """Write ``task`` conditional on the version it was read at; the written copy."""
        key = self.keys.task(task.id)
        version = await self.store.put(key, task.to_bytes(), expected_version=task.version)
        return task.model_copy(update={"version": version})

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

    async def _verdict(
        self, task: Task, member: str, now: datetime, cache: Blockers, renew_own: bool = True
    ) -> ClaimVerdict:
        """The claim rule's verdict, reading the blockers only when it turns on them."""
        states: Blockers = {}
        if eligibility.needs_blockers(task, member, now, renew_own=renew_own):
            states = await self._blocker_states(task, cache)
        return eligibility.claim_verdict(task, member, states, now, renew_own=renew_own)

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

    async def all_tasks(self) -> list[Task]:
        """Every readable task of the team, a page at a time (an unreadable one is logged)."""
        tasks: list[Task] = []
        async for page in self._pages(self.keys.tasks_prefix()):
            for key, task in await self._entries(page):
                if isinstance(task, Exception):
                    self._unreadable(self.keys.task_id_of(key), task)  # logged
                elif task is not None:
                    tasks.append(task)
        return tasks


def _decode(entry: Entry | None) -> Read:
    if entry is None:
        return None
    try:
        return Task.from_bytes(entry.value, entry.version)
    except UNREADABLE as exc:
        return exc
