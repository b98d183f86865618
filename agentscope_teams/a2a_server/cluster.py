"""A2A tasks shared by every ``serve`` process: versioned task records and their event stream.

The SDK's cluster mode needs two things, both kept in our store:

* :class:`VersionedTasks`, the task records with the store's entry version as the task version: a
  save names the version it was derived from and fails (the SDK's
  ``ConcurrentTaskModificationError``) when another process wrote the task since; a cancel
  overwrites any task that has not ended.
* :class:`StoreTaskEventStream`, each task's events (status and artifact updates, as the SDK's
  ``StreamResponse``) appended to a store stream with the version they produced. A client that
  resubscribes through a process not running the task gets the stored task, then the events after
  its version, live, as the running process appends them. Readers wait on the store's signals
  where it has them (Redis, PostgreSQL, memory), else poll every :data:`POLL_SECONDS`. A task's
  stream is deleted :data:`KEEP_SECONDS` after it ends (a resubscribe to an ended task is refused by
  the SDK, which answers with the stored task instead).

The deletions waiting out :data:`KEEP_SECONDS` are tasks the stream owns: :meth:`~StoreTaskEventStream.aclose`
(the A2A app's shutdown) deletes their streams at once and waits for them, so none is lost and
none outlives the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    StoredTask,
    TaskEventStream,
    TaskVersion,
    VersionedEvent,
    VersionedTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import (
    ListTasksRequest,
    ListTasksResponse,
    Message,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from google.protobuf.json_format import MessageToDict, ParseDict

from ..errors import VersionConflict
from ..keys import a2a_events_key
from ..store.base import BaseStore, signals_of
from .stores import ENDED, StorePushConfigStore, StoreTaskStore

log = logging.getLogger(__name__)

#: How often a reader looks for new events when the store has no signals (and the longest it
#: waits for a signal before looking anyway: a signal sent while nobody waits is lost).
POLL_SECONDS = 0.2
#: How long a task's event stream outlives the task's end (for readers still catching up).
KEEP_SECONDS = 30.0
_READ_BATCH = 100
_CANCEL_TRIES = 5


def _version_number(version: TaskVersion) -> int:
    """The store entry version a task version wraps (0: none yet)."""
    value = version._value  # the SDK offers no reader; our versions are ints we made
    return value if isinstance(value, int) else 0


class VersionedTasks(VersionedTaskStore):
    """The records of ``tasks`` (one exposed agent's) with compare-and-swap saves; a save that
    ends a task, pauses it for input or resumes it gives it, and its configs in ``pushes``, the
    TTL of its new state (:class:`~.lifetimes.Lifetimes`)."""

    def __init__(self, tasks: StoreTaskStore, pushes: StorePushConfigStore | None = None) -> None:
        self.tasks, self.pushes = tasks, pushes

    async def _write(
        self, task: Task, context: ServerCallContext, expected_version: int, prev: Task | None
    ) -> TaskVersion:
        """Write ``task``; when its TTL is not that of ``prev`` (it ended, paused for input or
        runs again), its push configs get the new one."""
        written = await self.tasks.write(task, context, expected_version=expected_version)
        ttl = self.tasks.ttl_of(task)
        before = None if prev is None else self.tasks.ttl_of(prev)
        if self.pushes is not None and ttl != before and (prev is not None or ttl is not None):
            await self.pushes.retain(task.id, ttl)
        return TaskVersion(written)

    async def save(
        self,
        task: Task,
        *,
        event: Any,
        prev: Task | None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        del event
        if task.status.state == TaskState.TASK_STATE_CANCELED:
            return await self._cancel(task, context)
        try:
            return await self._write(task, context, _version_number(prev_version), prev)
        except VersionConflict:
            raise ConcurrentTaskModificationError(task.id) from None

    async def _cancel(self, task: Task, context: ServerCallContext) -> TaskVersion:
        """Write the cancelled ``task`` over whatever version is stored, unless it has ended."""
        for _ in range(_CANCEL_TRIES):
            current = await self.tasks.get_stored(task.id, context)
            if current is None or current[0].status.state in ENDED:
                break
            try:
                return await self._write(task, context, current[1], current[0])
            except VersionConflict:
                continue  # the running process wrote it meanwhile: read it again
        raise ConcurrentTaskModificationError(task.id)

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        found = await self.tasks.get_stored(task_id, context)
        return None if found is None else StoredTask(found[0], TaskVersion(found[1]))

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        return await self.tasks.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        await self.tasks.delete(task_id, context)


def _response(event: Any) -> StreamResponse:
    if isinstance(event, Task):
        return StreamResponse(task=event)
    if isinstance(event, Message):
        return StreamResponse(message=event)
    if isinstance(event, TaskStatusUpdateEvent):
        return StreamResponse(status_update=event)
    if isinstance(event, TaskArtifactUpdateEvent):
        return StreamResponse(artifact_update=event)
    raise TypeError(f"not an A2A event: {type(event).__name__}")


def _event(response: StreamResponse, task_id: str, seq: int) -> Any:
    which = response.WhichOneof("payload")
    if which is None:
        raise ValueError(
            f"A2A task {task_id}: stored event {seq} of its event stream has no payload (written "
            "by an incompatible version?); cancel the task and send the message again"
        )
    return getattr(response, which)


def _ends(event: Any) -> bool:
    return isinstance(event, TaskStatusUpdateEvent | Task) and event.status.state in ENDED


class StoreTaskEventStream(TaskEventStream):
    """The events of one exposed agent's tasks, in the store, for every process."""

    def __init__(self, store: BaseStore, agent: str) -> None:
        self.store, self.agent = store, agent
        #: The deletions waiting out :data:`KEEP_SECONDS`, by task id (ended by :meth:`aclose`).
        self._cleanups: dict[str, asyncio.Task[None]] = {}
        self._closed = False

    async def publish(self, task_id: str, event: VersionedEvent) -> None:
        stream = a2a_events_key(self.agent, task_id)
        record = {
            "version": _version_number(event.version),
            "event": MessageToDict(_response(event.event)),
        }
        await self.store.append(stream, json.dumps(record, separators=(",", ":")).encode())
        signals = signals_of(self.store)
        if signals is not None:
            await signals.signal(stream)
        if _ends(event.event):
            await self._forget_later(task_id)

    async def subscribe(
        self, task_id: str, *, after: TaskVersion
    ) -> AsyncGenerator[VersionedEvent, None]:
        """The events of ``task_id`` that produced a version after ``after``, as they come."""
        stream = a2a_events_key(self.agent, task_id)
        floor, cursor = _version_number(after), 0
        signals = signals_of(self.store)
        while True:
            batch = await self.store.read(stream, after=cursor, limit=_READ_BATCH)
            for seq, value in batch:
                cursor = seq
                record = json.loads(value)
                if int(record["version"]) > floor:
                    response = ParseDict(record["event"], StreamResponse())
                    event = _event(response, task_id, seq)
                    yield VersionedEvent(event, TaskVersion(int(record["version"])))
            if len(batch) == _READ_BATCH:
                continue
            if signals is not None:
                await signals.wait_signal([stream], POLL_SECONDS)
            else:
                await asyncio.sleep(POLL_SECONDS)

    async def destroy(self, task_id: str) -> None:
        await self.store.delete_stream(a2a_events_key(self.agent, task_id))

    async def _forget_later(self, task_id: str) -> None:
        """Delete the stream of the ended ``task_id`` after :data:`KEEP_SECONDS` (at once when
        the stream is closed)."""
        if self._closed:
            await self.destroy(task_id)
            return
        if task_id in self._cleanups:  # a second end of one task: one deletion is enough
            return
        cleanup = asyncio.get_running_loop().create_task(self._sleep_then_destroy(task_id))
        self._cleanups[task_id] = cleanup
        cleanup.add_done_callback(lambda _: self._cleanups.pop(task_id, None))

    async def _sleep_then_destroy(self, task_id: str) -> None:
        await asyncio.sleep(KEEP_SECONDS)
        await self.destroy(task_id)

    async def aclose(self) -> None:
        """End the waiting deletions: each ended task's stream is deleted now, and this waits
        for every deletion (a failed one is logged), so no task outlives the server."""
        self._closed = True
        pending = list(self._cleanups.items())
        for _, cleanup in pending:
            cleanup.cancel()
        await asyncio.gather(*(c for _, c in pending), return_exceptions=True)
        for task_id, _ in pending:
            try:
                await self.destroy(task_id)
            except Exception as exc:  # the server is stopping: say what is left in the store
                log.warning("A2A task %s: its event stream was not deleted: %s", task_id, exc)
