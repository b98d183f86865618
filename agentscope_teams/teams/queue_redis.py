"""The board's native queue on Redis: every hot transition is one Lua script (one round trip).

Beside the task records (the store's entries, hash ``{v, n}``, read by ``store.get`` as ever) a
team has three sorted sets, named by :meth:`RedisStore.redis_name` from the team's key-registry keys, so
they share the team's hash slot with its records:

* pending (``<open prefix>:queue``): pending tasks, score = sequence (oldest first);
* held (``<held prefix>:queue``): in-progress tasks, score = lease expiry in ms, so expired leases
  are one ``ZRANGEBYSCORE`` away;
* owners (``<held prefix>:owners``): ``owner NUL seq NUL id`` per in-progress task, for
  ``prefer_own`` (a lex range per member).

The scripts (:mod:`.queue_redis_lua`) check the claim rule on the records they read and write the
new record with version + 1 and its index moves atomically. A claim's cost does not depend on held
tasks (they are not in the pending set); it grows only with pending tasks it must pass by (assigned
to others, or waiting on blockers), read inside the script, :data:`SCAN` at a time. A lease expiry
is exact to the millisecond: the held score is the record's ``lease_expires_at``, written at ms
precision by this path.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast
from weakref import WeakKeyDictionary, WeakSet

from pydantic import TypeAdapter

from ..listing import UNREADABLE
from ..store.encoding import encode_segment
from . import queue_redis_lua as lua
from .models import Task, TaskStatus, TeamKeys
from .queue import Finish, Outcome, TeamGuard, Verdict, no_guard

if TYPE_CHECKING:
    from ..store.redis import RedisStore

#: Pending tasks one claim script passes by before answering "more" (the board then calls again).
SCAN = 256
#: Tasks per page of an open-task listing (one script call each).
PAGE = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DATETIME: TypeAdapter[datetime] = TypeAdapter(datetime)
_PROBE = "t-0"


def _ms(now: datetime) -> int:
    return (now - _EPOCH) // timedelta(milliseconds=1)


def _iso(now: datetime) -> str:
    return cast(str, _DATETIME.dump_python(now, mode="json"))


def _template(store: RedisStore, keys: TeamKeys) -> tuple[str, str] | None:
    """(before, after) such that a task record's name is ``before + id + after``, or None."""
    name = store.redis_name(keys.task(_PROBE))
    if not name.endswith(_PROBE) and _PROBE not in name:
        return None
    before, _, after = name.rpartition(_PROBE)
    check = "t-12345"
    return (before, after) if store.redis_name(keys.task(check)) == before + check + after else None


_SCRIPT_NAMES = ("CLAIM_NEXT", "CLAIM", "FINISH", "RELEASE", "RENEW", "CANCEL", "REAP", "OPEN_PAGE")
_REGISTERED: WeakKeyDictionary[RedisStore, dict[str, Any]] = WeakKeyDictionary()
#: Stores whose servers have every queue script loaded (see :meth:`RedisStore.load_scripts`).
_LOADED: WeakSet[RedisStore] = WeakSet()


def _scripts_of(store: RedisStore) -> dict[str, Any]:
    """The scripts registered on ``store``'s client, once per store (a board is built per call)."""
    found = _REGISTERED.get(store)
    if found is None:
        found = {n: store.register_script(getattr(lua, n)) for n in _SCRIPT_NAMES}
        _REGISTERED[store] = found
    return found


def redis_queue_supported(store: RedisStore) -> bool:
    """Whether the store names task records so the scripts can derive them (always, today)."""
    return _template(store, TeamKeys(("o", "u"), "team")) is not None


class RedisBoardQueue:
    """The native queue of one team's board on one Redis store (see the module docs)."""

    guards_team = False

    def __init__(self, store: RedisStore, keys: TeamKeys) -> None:
        template = _template(store, keys)
        if template is None:  # pragma: no cover - redis_queue_supported said otherwise
            raise ValueError("task record names cannot be templated")
        self.store, self.keys = store, keys
        self._template = template
        self._keys = [
            store.redis_name(keys.open_prefix(), ":queue"),
            store.redis_name(keys.held_prefix(), ":queue"),
            store.redis_name(keys.held_prefix(), ":owners"),
        ]
        self._scripts = _scripts_of(store)

    async def _run(self, script: str, now: datetime, *args: str | float) -> Any:
        if self.store not in _LOADED:  # once per store: every script on every primary
            await self.store.load_scripts([getattr(lua, n) for n in _SCRIPT_NAMES])
            _LOADED.add(self.store)
        argv = [*self._template, str(_ms(now)), _iso(now), *map(str, args)]
        async with self.store.commands():
            return await self._scripts[script](keys=self._keys, args=argv)

    @staticmethod
    def _task(raw: bytes, version: bytes | int) -> Task:
        return Task.from_bytes(raw, int(version))

    def _outcome(self, reply: list[Any]) -> Outcome:
        code = int(reply[0])
        if code == Verdict.MISSING:
            return Outcome(Verdict.MISSING)
        return Outcome(Verdict(code), self._task(reply[1], reply[2]))

    async def _named(self, script: str, task_id: str, now: datetime, *args: str | float) -> Outcome:
        if encode_segment(task_id) != task_id:  # not a board id (t-<seq>): no such record
            return Outcome(Verdict.MISSING)
        return self._outcome(await self._run(script, now, task_id, *args))

    async def enqueue(self, task: Task) -> None:
        async with self.store.commands() as client:
            await client.zadd(self._keys[0], {task.id: task.seq})

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
        offset, own = 0, "1" if prefer_own else ""
        lease_ms = round(lease * 1000)
        while True:
            reply = await self._run("CLAIM_NEXT", now, member, lease, lease_ms, own, offset, SCAN)
            if int(reply[0]) == 1:
                return self._task(reply[1], reply[2])
            if int(reply[0]) == 0:
                return None
            offset, own = int(reply[1]), ""

    async def claim(self, member: str, task_id: str, lease: float, now: datetime) -> Outcome:
        return await self._named("CLAIM", task_id, now, member, lease, round(lease * 1000))

    async def finish(
        self, member: str, task_id: str, how: Finish, now: datetime, guard: TeamGuard | None = None
    ) -> Outcome:
        no_guard(guard)
        field = "result" if how.status is TaskStatus.COMPLETED else "error"
        data = "" if how.data is None else json.dumps(how.data)
        args = (member, how.status.value, field, how.text, how.detail, data, int(how.checked))
        return await self._named("FINISH", task_id, now, *args)

    async def release(self, member: str, task_id: str, now: datetime) -> Outcome:
        return await self._named("RELEASE", task_id, now, member)

    async def renew(self, member: str, task_id: str, lease: float | None, now: datetime) -> Outcome:
        return await self._named("RENEW", task_id, now, member, "" if lease is None else lease)

    async def cancel(self, actor: str, task_id: str, reason: str, now: datetime) -> Outcome:
        return await self._named("CANCEL", task_id, now, actor, reason)

    async def reap(self, now: datetime) -> list[Task]:
        flat = await self._run("REAP", now)
        return [self._task(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]

    async def open_tasks(self) -> list[tuple[str, Task | Exception]]:
        out: list[tuple[str, Task | Exception]] = []
        for held in ("", "1"):
            offset = 0
            while True:
                argv = [*self._template, "0", "", held, str(offset), str(PAGE)]
                async with self.store.commands():
                    flat = await self._scripts["OPEN_PAGE"](keys=self._keys, args=argv)
                for i in range(1, len(flat), 3):
                    out.append((flat[i].decode(), _decoded(flat[i + 1], flat[i + 2])))
                if int(flat[0]) < PAGE:
                    break
                offset += PAGE
        return out

    async def rebuild(self, tasks: Sequence[Task]) -> None:
        pending, held, owners = self._keys
        async with self.store.commands() as client, client.pipeline(transaction=True) as pipe:
            pipe.delete(pending, held, owners)
            for t in tasks:
                if t.status is TaskStatus.PENDING:
                    pipe.zadd(pending, {t.id: t.seq})
                elif t.status is TaskStatus.IN_PROGRESS and t.owner is not None:
                    until = t.lease_expires_at or _EPOCH
                    pipe.zadd(held, {t.id: _ms(until)})
                    pipe.zadd(owners, {f"{t.owner}\0{t.seq:020d}\0{t.id}": 0})
            await pipe.execute()

    async def drop(self) -> None:
        """Delete the queue's index (the team is being deleted)."""
        async with self.store.commands() as client:
            await client.delete(*self._keys)


def _decoded(raw: bytes, version: bytes) -> Task | Exception:
    try:
        return Task.from_bytes(raw, int(version))
    except UNREADABLE as exc:
        return exc
