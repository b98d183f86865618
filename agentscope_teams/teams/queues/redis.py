"""The board's native queue on Redis: every hot transition is one Lua script (one round trip).

Beside the task records (the store's entries, hash ``{v, n}``, read by ``store.get`` as ever) a
team has four sorted sets, named by :meth:`RedisStore.redis_name` from the team's key-registry keys, so
they share the team's hash slot with its records:

* pending (``<open prefix>:queue``): pending tasks routed to nobody, score = sequence (oldest
  first);
* routed (``<open prefix>:routed``): pending tasks routed to a member, ``assignee NUL seq NUL
  id`` per task (score 0, a lex range per member, oldest first), so a claim reads its member's
  own and never the tasks routed to others (a board of the previous release, which kept them in
  the pending set, is moved over lazily: :mod:`.redis_lua`);
* held (``<held prefix>:queue``): in-progress tasks, score = lease expiry in ms, so expired leases
  are one ``ZRANGEBYSCORE`` away;
* owners (``<held prefix>:owners``): ``owner NUL seq NUL id`` per in-progress task, for
  ``prefer_own`` (a lex range per member).

The scripts (:mod:`.redis_lua`) check the claim rule on the records they read and write the
new record with version + 1 and its index moves atomically. On a standalone Redis 7+ without
``replica_acks`` they run as the functions of one library, loaded once per store (``FCALL``:
their helpers are not rebuilt on every call); elsewhere as scripts (``EVALSHA``; see
:func:`_prepare`). A claim's cost does not depend on held tasks (they are not in the pending
set) nor on the tasks routed to other members (they are in the routed set, outside the
member's range); it grows only with pending tasks it must pass by (waiting on blockers), read
inside the script, :data:`SCAN` at a time. A lease expiry
is exact to the millisecond: the held score is the record's ``lease_expires_at``, written at ms
precision by this path.

**Declared records.** A script reads only the task records passed in its KEYS (Redis Cluster
routes a script by its declared keys, and during a slot migration refuses it with ASK / TRYAGAIN
unless they are all on one node: see ``docs/redis-cluster.md``). A named transition declares its
task. ``claim_next`` declares the ids its previous reply hinted (the pending head) and the ids this
process recently enqueued, claimed or was asked for (:class:`_Hints`); a script that meets a record
it was not given replies NEED and the ids, and is called again with them, having written nothing.
On a standalone server (no cluster) the scripts may read any record of the team, so no record is
declared on a guess and no NEED reply happens: a claim's KEYS are its four sets (and the team
record of a guard).
Round trips: one per transition in the common case; one more when another process took the hinted
tasks, a blocker or an expired lease's task is new to this process, or a listing page (``reap``:
one per batch; ``open_tasks``: one for the first page of both sets, then one per further page).
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from ...errors import ConfigurationError, StoreUnavailableError
from ...listing import UNREADABLE
from ...store.encoding import encode_segment
from ..rules.models import Task, TaskStatus, TeamKeys
from . import redis_lua as lua
from .base import Finish, Outcome, TeamChanged, TeamGuard, Verdict

if TYPE_CHECKING:
    from ...store.redis import RedisStore

#: Pending tasks one claim script passes by before answering "more" (the board then calls again);
#: part of the script's text (:data:`.redis_lua.SCAN`), not an argument.
SCAN = lua.SCAN
#: Tasks per page of an open-task listing, per set (one script call reads both sets' first pages).
PAGE = 1000
#: Expired leases one reap script settles.
REAP_BATCH = 64
#: Calls one transition may take to declare every record it needs (each adds the missing ones).
MAX_ROUNDS = 16
#: Whether scripts on a standalone server read records they were not given (see the module docs;
#: the tests turn it off to check the declared-keys discipline a cluster needs on a standalone too).
OPEN_STANDALONE = True
#: Ids a team's hints keep from this process's own enqueues, claims and NEED replies.
RECENT = 32
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
log = logging.getLogger(__name__)
_PROBES = ("t-0", "t-12345")
#: FINISH's reply when its team guard is stale (nothing written).
_TEAM_CHANGED = -3


def _ms(now: datetime) -> int:
    return (now - _EPOCH) // timedelta(milliseconds=1)


_MICROSECOND = timedelta(microseconds=1)


def _us(now: datetime) -> int:
    return (now - _EPOCH) // _MICROSECOND


def _names(store: RedisStore, keys: TeamKeys) -> tuple[list[str], str] | None:
    """The team's four sets (pending, held, owners, routed) and the start of its task records' names (the name of task ``i`` is
    that + ``i``), or None when the records are not named as the scripts derive them: the
    pending set's name with :data:`.redis_lua.PENDING_SUFFIX` replaced by ``RECORD_INFIX``."""
    pending = store.redis_name(keys.open_prefix(), ":queue")
    if not pending.endswith(lua.PENDING_SUFFIX):
        return None
    before = pending[: -len(lua.PENDING_SUFFIX)] + lua.RECORD_INFIX
    if any(store.redis_name(keys.task(i)) != before + i for i in _PROBES):
        return None
    held = store.redis_name(keys.held_prefix(), ":queue")
    owners = store.redis_name(keys.held_prefix(), ":owners")
    return [pending, held, owners, store.redis_name(keys.open_prefix(), ":routed")], before


#: What each store runs a queue script as (see :func:`_prepare`), once per store.
_PREPARED: WeakKeyDictionary[RedisStore, dict[str, Any]] = WeakKeyDictionary()
#: Whether a store may call the queue's Redis functions (the tests turn it off to run the scripts).
FUNCTIONS = True


class _Function:
    """A queue script run as its function of :data:`.redis_lua.LIBRARY` (``FCALL``), called as a
    registered script is: ``await f(keys=..., args=...)``. A server that lost the library (a
    restart without persistence, ``FUNCTION FLUSH``) has it loaded again, once per call."""

    __slots__ = ("client", "name", "refused")

    def __init__(self, store: RedisStore, name: str) -> None:
        self.client, self.name, self.refused = store.client, name, store.response_error

    def command(self, keys: Sequence[Any], args: Sequence[Any]) -> tuple[Any, ...]:
        """The command that calls the function on ``keys`` and ``args`` (the store's riders send
        it in a pipeline)."""
        return ("FCALL", self.name, len(keys), *keys, *args)

    def missing(self, error: BaseException) -> bool:
        """Whether ``error`` says the server lost the library (calling loads it again)."""
        # redis-py's text of the server's reply
        return isinstance(error, self.refused) and str(error) == "Function not found"

    async def __call__(self, keys: Sequence[str] = (), args: Sequence[Any] = ()) -> Any:
        run = self.client.execute_command
        try:
            return await run(*self.command(keys, args))
        except self.refused as exc:
            if not self.missing(exc):
                raise
            await self.client.function_load(lua.LIBRARY, replace=True)
            return await run(*self.command(keys, args))


async def _prepare(store: RedisStore) -> dict[str, Any]:
    """What ``store`` runs each queue script as, its server made ready once per store: the
    library's functions (one ``FUNCTION LOAD``) on a standalone Redis 7+ without
    ``replica_acks``; else the scripts by ``EVALSHA`` (loaded on every primary), as on Redis 6,
    a cluster (a library would be loaded on each primary and again after each failover) and with
    ``replica_acks`` (whose ``WAIT`` follows an ``EVALSHA``)."""
    found = _PREPARED.get(store)
    if found is not None:
        return found
    if FUNCTIONS and not store.cluster and not store.replica_acks:
        try:
            await store.call(lambda client: client.function_load(lua.LIBRARY, replace=True))
        except store.response_error as exc:  # no FUNCTION command (Redis < 7), or not allowed (ACL)
            log.info("Redis functions unavailable, the board queue runs scripts: %s", exc)
        else:
            found = {n: _Function(store, f) for n, f in lua.FUNCTIONS.items()}
    if found is None:
        await store.load_scripts(list(lua.SCRIPTS.values()))
        found = {n: store.register_script(s) for n, s in lua.SCRIPTS.items()}
    _PREPARED[store] = found
    return found


class _Hints:
    """The task ids a team's next ``claim_next`` will likely read, kept per store and team: the
    pending head its last reply named, and the ids this process recently enqueued, claimed or was
    asked for. Declaring an id that is not needed costs only its name in KEYS."""

    __slots__ = ("head", "recent")

    def __init__(self) -> None:
        self.head: list[str] = []
        self.recent: deque[str] = deque(maxlen=RECENT)

    def ids(self) -> list[str]:
        return list(dict.fromkeys([*self.head, *self.recent]))

    def remember(self, ids: Iterable[str]) -> None:
        for i in ids:
            if i not in self.recent:
                self.recent.append(i)


_HINTS: WeakKeyDictionary[RedisStore, dict[str, _Hints]] = WeakKeyDictionary()
_TEAMS_HINTED = 1024


def _hints_of(store: RedisStore, pending: str) -> _Hints:
    teams = _HINTS.setdefault(store, {})
    found = teams.get(pending)
    if found is None:
        if len(teams) >= _TEAMS_HINTED:
            teams.clear()
        found = teams[pending] = _Hints()
    return found


def redis_queue_supported(store: RedisStore) -> bool:
    """Whether the store names task records so the scripts can derive them (always, today)."""
    return _names(store, TeamKeys(("o", "u"), "team")) is not None


class RedisBoardQueue:
    """The native queue of one team's board on one Redis store (see the module docs)."""

    guards_team = True
    #: ``claim_next`` checks a guard together with ``prefer_own`` (the same script call).
    guards_own = True
    native = True

    def __init__(self, store: RedisStore, keys: TeamKeys) -> None:
        names = _names(store, keys)
        if names is None:  # pragma: no cover - redis_queue_supported said otherwise
            raise ConfigurationError(
                f"team {keys.team_id!r}: this Redis store does not name task records after the "
                "board's pending set, so the native queue cannot run its scripts; build the board "
                "through queues.factory, which checks redis_queue_supported and falls back"
            )
        self.store, self.keys = store, keys
        self._keys, self._before = names
        self._hints = _hints_of(store, self._keys[0])
        #: A standalone server: scripts read undeclared records (see :mod:`.redis_lua`).
        self._open = OPEN_STANDALONE and not store.cluster
        self._flag = "1" if self._open else ""
        #: What the store runs each script as (:func:`_prepare`), once it has been asked.
        self._scripts: dict[str, Any] | None = None

    def _record(self, task_id: str) -> str:
        return self._before + task_id

    async def _run(
        self,
        script: str,
        now: datetime,
        *args: str | float,
        ids: Iterable[str] = (),
        guard: TeamGuard | None = None,
    ) -> Any:
        """Run ``script`` with the records of ``ids`` declared, adding those a NEED reply asks
        for, until it answers (at most :data:`MAX_ROUNDS` calls). A ``guard``'s version is the
        last argument and its team record the last key (same hash slot: the team's tag)."""
        scripts = self._scripts
        if scripts is None:
            scripts = self._scripts = await _prepare(self.store)
        argv = [str(_us(now)), self._flag, *map(str, args)]
        tail: list[str] = []
        if guard is not None:
            argv.append(str(guard.version))
            tail.append(self.store.redis_name(guard.key))
        declared = dict.fromkeys(ids)
        for _ in range(MAX_ROUNDS):
            keys = [*self._keys, *map(self._record, declared), *tail]
            run = self.store.run_script
            reply = await run(scripts[script], keys, argv, writes=script != "OPEN_PAGE")
            if not (isinstance(reply, list) and reply and int(reply[0]) == lua.NEED):
                return reply
            asked = [raw.decode() for raw in reply[1:]]
            self._hints.remember(asked)
            declared.update(dict.fromkeys(asked))
        raise StoreUnavailableError(
            f"the board {self.keys.team()!r} changed under {MAX_ROUNDS} calls of {script} in a "
            "row (each found tasks it had not been given); try again"
        )

    @staticmethod
    def _task(raw: bytes, version: bytes | int) -> Task:
        return Task.from_bytes(raw, int(version))

    def _outcome(self, reply: list[Any]) -> Outcome:
        code = int(reply[0])
        if code == Verdict.MISSING:
            return Outcome(Verdict.MISSING)
        return Outcome(Verdict(code), self._task(reply[1], reply[2]))

    async def _named(
        self,
        script: str,
        task_id: str,
        now: datetime,
        *args: str | float,
        guard: TeamGuard | None = None,
    ) -> Outcome:
        if encode_segment(task_id) != task_id:  # not a board id (t-<seq>): no such record
            return Outcome(Verdict.MISSING)
        reply = await self._run(script, now, task_id, *args, ids=[task_id], guard=guard)
        if int(reply[0]) == _TEAM_CHANGED:
            raise TeamChanged(self.keys.team_id)
        return self._outcome(reply)

    async def enqueue(self, task: Task) -> None:
        which, score, member = self._pending_entry(task)
        name = self._keys[which]
        await self.store.write_command(("ZADD", name, score, member), name)
        self._hints.remember([task.id])

    async def claim_next(
        self,
        member: str,
        lease: float,
        now: datetime,
        *,
        prefer_own: bool,
        guard: TeamGuard | None = None,
    ) -> Task | None:
        offset, own = 0, "1" if prefer_own else ""
        while True:
            ids = () if self._open else self._hints.ids()
            reply = await self._run(
                "CLAIM_NEXT", now, member, lease, own, offset, ids=ids, guard=guard
            )
            code = int(reply[0])
            task = self._task(reply[1], reply[2]) if code == 1 else None
            if not self._open:  # a standalone server's scripts neither hint nor read hints
                self._hinted(code, reply, task)
            if code != 2:  # 1: claimed, 0: nothing claimable; 2: call again from the offset
                return task
            offset, own = int(reply[1]), ""

    def _hinted(self, code: int, reply: list[Any], task: Task | None) -> None:
        """Keep the hints of a ``CLAIM_NEXT`` reply (code ``code``): the pending head it names,
        and the ``task`` it claimed."""
        hints = reply[3:] if code == 1 else reply[1:] if code == 0 else reply[2:]
        self._hints.head = [raw.decode() for raw in hints]
        if task is not None:
            self._hints.remember([task.id])

    @staticmethod
    def _pending_entry(task: Task) -> tuple[int, int, str]:
        """The set a pending ``task`` is indexed in (3: routed, or 0: pending, as in the queue's
        keys) and its score and member there."""
        if task.assignee is not None:
            return 3, 0, _member_entry(task.assignee, task)
        return 0, task.seq, task.id

    async def claim(self, member: str, task_id: str, lease: float, now: datetime) -> Outcome:
        return await self._named("CLAIM", task_id, now, member, lease)

    async def finish(
        self, member: str, task_id: str, how: Finish, now: datetime, guard: TeamGuard | None = None
    ) -> Outcome:
        field = "result" if how.status is TaskStatus.COMPLETED else "error"
        data = "" if how.data is None else json.dumps(how.data)
        args = (member, how.status.value, field, how.text, how.detail, data, int(how.checked))
        return await self._named("FINISH", task_id, now, *args, guard=guard)

    async def release(self, member: str, task_id: str, now: datetime) -> Outcome:
        return await self._named("RELEASE", task_id, now, member)

    async def renew(self, member: str, task_id: str, lease: float | None, now: datetime) -> Outcome:
        return await self._named("RENEW", task_id, now, member, "" if lease is None else lease)

    async def cancel(self, actor: str, task_id: str, reason: str, now: datetime) -> Outcome:
        return await self._named("CANCEL", task_id, now, actor, reason)

    async def reap(self, now: datetime) -> list[Task]:
        out: list[Task] = []
        offset = 0  # expired entries left in place (undecodable records) are passed by
        while True:
            flat = await self._run("REAP", now, offset, REAP_BATCH)
            out += [self._task(flat[i], flat[i + 1]) for i in range(2, len(flat), 2)]
            if int(flat[0]) != 1:  # 1: a full batch, there may be more
                return out
            offset += int(flat[1])

    async def open_tasks(self) -> list[tuple[str, Task | Exception]]:
        """The pending tasks (routed or not) in ``seq`` order, then the held ones: the first page
        of every set in one script call, further pages of a set (one call each) only after a
        full one."""
        found: dict[str, list[tuple[str, Task | Exception]]] = {"0": [], "1": [], "2": []}
        sets, offset = "012", 0
        while sets:
            flat = await self._run("OPEN_PAGE", _EPOCH, sets, offset, PAGE)
            full, at = "", 1
            for which in sets:
                read, records = int(flat[at]), int(flat[at + 1])
                end = at + 2 + 3 * records
                found[which] += [
                    (flat[i].decode(), _decoded(flat[i + 1], flat[i + 2]))
                    for i in range(at + 2, end, 3)
                ]
                full += which if read == PAGE else ""
                at = end
            sets, offset = full, offset + PAGE
        return sorted(found["0"] + found["2"], key=_seq_of) + found["1"]

    async def rebuild(self, tasks: Sequence[Task]) -> None:
        """Replace the four sets with the entries of ``tasks``: one script call
        (:data:`.redis_lua.REBUILD`, atomic), a write the store confirms as its others."""
        entries: tuple[list[int | str], ...] = ([], [], [], [])  # pending, held, owners, routed
        for t in tasks:
            if t.status is TaskStatus.PENDING:
                which, score, member = self._pending_entry(t)
                entries[which].extend((score, member))
            elif t.status is TaskStatus.IN_PROGRESS and t.owner is not None:
                entries[1].extend((_ms(t.lease_expires_at or _EPOCH), t.id))
                entries[2].extend((0, _member_entry(t.owner, t)))
        args = [len(found) // 2 for found in entries] + [x for found in entries for x in found]
        script = self.store.register_script(lua.REBUILD)
        await self.store.run_script(script, self._keys, args)

    async def drop(self) -> None:
        """Delete the queue's index (the team is being deleted)."""
        await self.store.write_command(("DEL", *self._keys), self._keys[0])


def _member_entry(member: str, task: Task) -> str:
    """``task``'s entry in a per-member set (owners, routed): ``member NUL seq NUL id``, as the
    scripts' ``owner_member`` writes it."""
    return f"{member}\0{task.seq:020d}\0{task.id}"


def _seq_of(listed: tuple[str, Task | Exception]) -> int:
    """The ``seq`` of a listed task (an unreadable one: from its id, ``t-<seq>``)."""
    task_id, task = listed
    if isinstance(task, Task):
        return task.seq
    digits = task_id.removeprefix("t-")
    return int(digits) if digits.isdigit() else 0


def _decoded(raw: bytes, version: bytes) -> Task | Exception:
    try:
        return Task.from_bytes(raw, int(version))
    except UNREADABLE as exc:
        return exc
