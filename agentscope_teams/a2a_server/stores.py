"""The SDK's task and push-config stores over our :class:`~agentscope_teams.store.BaseStore`.

A2A tasks live in the store as everything else, so every ``serve`` process sharing it sees the
same tasks: a task paused for input in one process is answered through another. Records are
scoped by the caller (org, user) and the exposed agent; a caller never reads another's task.
Push-notification configs are keyed by agent and task (the SDK's sender dispatches without a
caller) and name their owner, which every caller-facing read checks.

Lifetimes (:mod:`.lifetimes`): an ended task is written with a TTL of the retention and its push
configs are given the same TTL; a task waiting for input is written with a TTL of the input
time-out plus the retention (its configs too), reads as cancelled once the time-out has passed
(the first :meth:`StoreTaskStore.get_stored` after it writes that end), and goes a retention
later; a task submitted or working has no TTL. Reading an expired task is the protocol's "task
not found". Records carry ``schema_version`` 2; a record of version 1 (written before waiting
tasks had a TTL, or before ended ones had) is given its TTL once by :mod:`.backfill`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.tasks import PushNotificationConfigStore, TaskStore
from a2a.types.a2a_pb2 import (
    ListTasksRequest,
    ListTasksResponse,
    Task,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError
from google.protobuf.json_format import MessageToDict, ParseDict

from ..errors import VersionConflict
from ..keys import a2a_push_key, a2a_push_prefix, a2a_task_key, a2a_tasks_prefix
from ..store.base import BaseStore, get_many
from .auth import caller_of
from .lifetimes import (
    ENDED,
    INPUT_TIMEOUT_SECONDS,
    TASK_RETENTION_SECONDS,
    Lifetimes,
    check_input_timeout,
    check_retention,
)

__all__ = [
    "ENDED",
    "INPUT_TIMEOUT_SECONDS",
    "SCHEMA_VERSION",
    "TASK_RETENTION_SECONDS",
    "StorePushConfigStore",
    "StoreTaskStore",
    "check_input_timeout",
    "check_retention",
    "decode_task",
    "encode_task",
]

log = logging.getLogger(__name__)

#: 2: written with the TTL of its state, waiting tasks included (1: ended ones only, or none).
SCHEMA_VERSION = 2
#: How often a read tries to record a waiting task's time-out against concurrent writes.
_TIME_OUT_TRIES = 3
#: How often a push config is rewritten with its TTL against concurrent changes.
_RETAIN_TRIES = 5
_PAGE = 50
_KEY_PAGE = 1000
_MAX_TOKEN_DIGITS = 9


def _encode(kind: str, message: Any, **more: Any) -> bytes:
    record = {"schema_version": SCHEMA_VERSION, kind: MessageToDict(message), **more}
    return json.dumps(record, separators=(",", ":")).encode()


def encode_task(task: Task) -> bytes:
    """The stored value of a task record."""
    return _encode("task", task)


def decode_task(value: bytes) -> tuple[Task, int]:
    """The task of a stored record and the record's schema version."""
    record = json.loads(value)
    return ParseDict(record["task"], Task()), int(record.get("schema_version", 1))


class StoreTaskStore(TaskStore):
    """A2A task records of the exposed agent ``agent``, one entry per task per caller, living as
    ``retention`` and ``input_timeout`` say (:class:`~.lifetimes.Lifetimes`); ``clock`` (Unix
    seconds) is what a waiting task's time-out is judged by."""

    def __init__(
        self,
        store: BaseStore,
        agent: str,
        *,
        retention: float = TASK_RETENTION_SECONDS,
        input_timeout: float = INPUT_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store, self.agent, self.clock = store, agent, clock
        self.lifetimes = Lifetimes(retention, input_timeout)

    @property
    def retention(self) -> float:
        return self.lifetimes.retention

    def key(self, task_id: str, context: ServerCallContext) -> tuple[str, ...]:
        """The store key of the caller's task ``task_id``."""
        who = caller_of(context)
        return a2a_task_key(who.org_id, who.user_id, self.agent, task_id)

    def ttl_of(self, task: Task) -> float | None:
        """The TTL a record of ``task`` is written with (:meth:`.Lifetimes.ttl_of`)."""
        return self.lifetimes.ttl_of(task)

    async def write(
        self, task: Task, context: ServerCallContext, *, expected_version: int | None = None
    ) -> int:
        """Write the caller's ``task`` (compare-and-swap on ``expected_version`` when given) with
        the TTL of its state; its new version."""
        key, value = self.key(task.id, context), encode_task(task)
        return await self.store.put(
            key, value, expected_version=expected_version, ttl=self.ttl_of(task)
        )

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await self.write(task, context)

    async def get_stored(self, task_id: str, context: ServerCallContext) -> tuple[Task, int] | None:
        """The caller's task ``task_id`` and the version of its record; None when absent. A task
        that waited for input past the time-out is returned cancelled, and that end is written
        (compare-and-swap: an answer or a cancel written meanwhile is read again instead)."""
        if not task_id:
            return None
        key = self.key(task_id, context)
        tries = _TIME_OUT_TRIES
        while (entry := await self.store.get(key)) is not None:
            task, _ = decode_task(entry.value)
            now = self.clock()
            ended = self.lifetimes.timed_out(task, now)
            if ended is None:
                return task, entry.version
            tries -= 1
            if tries == 0:  # still contended: this reader sees the end all the same
                return ended, entry.version
            try:
                return await self._end_waiting(key, ended, entry.version, now)
            except VersionConflict:
                continue  # written meanwhile: read it again
        return None

    async def _end_waiting(
        self, key: tuple[str, ...], ended: Task, version: int, now: float
    ) -> tuple[Task, int] | None:
        """Write the timed-out end of a waiting task over ``version``, kept what is left of its
        retention (deleted when none is: it is past that too)."""
        left = self.lifetimes.left(ended, now)
        if left <= 0:
            await self.store.delete(key, expected_version=version)
            return None
        written = await self.store.put(key, encode_task(ended), expected_version=version, ttl=left)
        return ended, written

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        found = await self.get_stored(task_id, context)
        return None if found is None else found[0]

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        await self.store.delete(self.key(task_id, context))

    async def _all(self, context: ServerCallContext) -> list[Task]:
        """Every task of the caller (a page of keys and one batched read at a time), as it stands
        now (a waiting one past the time-out cancelled): the newest may be any key, so a list
        sorted by time needs them all."""
        who = caller_of(context)
        prefix = a2a_tasks_prefix(who.org_id, who.user_id, self.agent)
        tasks: list[Task] = []
        after = None
        now = self.clock()
        while keys := await self.store.list_keys(prefix, limit=_KEY_PAGE, after=after):
            for entry in await get_many(self.store, keys):
                if entry is not None:  # deleted since it was listed
                    task, _ = decode_task(entry.value)
                    tasks.append(self.lifetimes.timed_out(task, now) or task)
            after = keys[-1]
        return tasks

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The caller's tasks, newest status first, filtered by context and state; the page
        token is the offset of the page. Refused to an anonymous caller: every caller without
        credentials is that one caller, so its list would hold the tasks of all of them."""
        if caller_of(context).user_id is None:
            raise UnsupportedOperationError(
                message="listing tasks needs credentials: every caller without a token is the "
                "same anonymous caller, so the list would show other callers' tasks; read your "
                "tasks one by one with GetTask (keep the ids you are given), or send "
                "'Authorization: Bearer TOKEN'"
            )
        tasks = [
            task
            for task in await self._all(context)
            if (not params.context_id or task.context_id == params.context_id)
            and (not params.status or task.status.state == params.status)
        ]
        tasks.sort(key=lambda t: (t.status.timestamp.ToNanoseconds(), t.id), reverse=True)
        start = _page_start(params.page_token)
        size = params.page_size or _PAGE
        end = start + size
        return ListTasksResponse(
            tasks=tasks[start:end],
            next_page_token=str(end) if end < len(tasks) else "",
            total_size=len(tasks),
            page_size=size,
        )


def _page_start(token: str) -> int:
    """The offset a page token names: "" is the first page; a token this server never gave
    (not ASCII digits, or longer than any offset) is an invalid parameter, not an internal error."""
    if not token:
        return 0
    if not (token.isascii() and token.isdigit() and len(token) <= _MAX_TOKEN_DIGITS):
        raise InvalidParamsError(
            message=f"pageToken {token[:40]!r} is not a page token of this server; "
            "send the nextPageToken of the previous page, or none for the first page"
        )
    return int(token)


class StorePushConfigStore(PushNotificationConfigStore):
    """Push-notification configs of the exposed agent's tasks. With ``tasks`` (the agent's task
    records), a config set on a task that has already ended expires with it; :meth:`retain` gives
    a task's configs the TTL of its end."""

    def __init__(self, store: BaseStore, agent: str, tasks: StoreTaskStore | None = None) -> None:
        self.store, self.agent, self.tasks = store, agent, tasks

    async def set_info(
        self, task_id: str, notification_config: TaskPushNotificationConfig, context: Any
    ) -> TaskPushNotificationConfig:
        config = TaskPushNotificationConfig()
        config.CopyFrom(notification_config)
        config.task_id = task_id
        config.id = config.id or task_id
        owner = caller_of(context).owner
        ttl = None
        if self.tasks is not None and (task := await self.tasks.get(task_id, context)) is not None:
            ttl = self.tasks.ttl_of(task)
        await self.store.put(
            a2a_push_key(self.agent, task_id, config.id),
            _encode("config", config, owner=owner),
            ttl=ttl,
        )
        return config

    async def retain(self, task_id: str, ttl: float | None) -> None:
        """Make every push config of ``task_id`` expire in ``ttl`` seconds (it ended, or waits
        for input; the sender still reads them for the end's notification, sent after the task is
        saved), or never (None: it runs again). Each is rewritten over the version read: a config
        changed meanwhile is read again and given the TTL as it now stands, never overwritten
        with the older value."""
        for key in await self.store.list_keys(a2a_push_prefix(self.agent, task_id)):
            await self._retain_one(key, ttl)

    async def _retain_one(self, key: tuple[str, ...], ttl: float | None) -> None:
        for _ in range(_RETAIN_TRIES):
            entry = await self.store.get(key)
            if entry is None:  # deleted meanwhile
                return
            try:
                await self.store.put(key, entry.value, expected_version=entry.version, ttl=ttl)
                return
            except VersionConflict:
                continue
        log.warning(
            "A2A push config %s: its TTL (%s s) was not set: it changed at each of %d tries",
            key,
            ttl,
            _RETAIN_TRIES,
        )

    async def _records(self, task_id: str) -> list[tuple[str, TaskPushNotificationConfig]]:
        found = []
        for key in await self.store.list_keys(a2a_push_prefix(self.agent, task_id)):
            entry = await self.store.get(key)
            if entry is not None:
                record = json.loads(entry.value)
                found.append(
                    (record["owner"], ParseDict(record["config"], TaskPushNotificationConfig()))
                )
        return found

    async def get_info(self, task_id: str, context: Any) -> list[TaskPushNotificationConfig]:
        owner = caller_of(context).owner
        return [c for who, c in await self._records(task_id) if who == owner]

    async def get_info_for_dispatch(self, task_id: str) -> list[TaskPushNotificationConfig]:
        return [c for _, c in await self._records(task_id)]

    async def delete_info(self, task_id: str, context: Any, config_id: str | None = None) -> None:
        owner = caller_of(context).owner
        for who, config in await self._records(task_id):
            if who == owner and config_id in (None, config.id):
                await self.store.delete(a2a_push_key(self.agent, task_id, config.id))
