"""One store operation per step of a model call: before it, reserve on its budgets and take its
rate-limit turn (:meth:`UsageBackend.admit`); after it, settle and end the lease
(:meth:`UsageBackend.finish`). :func:`usage_backend` picks Redis scripts, PostgreSQL statements
(:mod:`.sql_pg`) or locked documents (:mod:`.docs`). Each backend keeps the settles of its store
in flight (:class:`~.settles.Settles`: ``finish`` runs beside the caller's next work)."""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ..errors import StoreUnavailableError
from ..store.closing import land_before_close
from . import redis_lua, rules
from .docs import DocBackend, doc_id, docs_for
from .rules import GRANTED, Admission, Admitted, Refusal
from .settles import Settles

if TYPE_CHECKING:
    from ..store.redis import RedisStore

log = logging.getLogger(__name__)


class Rides(Protocol):
    """A backend whose ``ADMIT`` and ``FINISH`` can ride round trips the call makes anyway (the
    session lease + load, the last save; Redis on one server: :class:`RedisUsage`)."""

    def open_rides(self) -> object | None: ...

    def close_rides(self, token: object) -> None: ...

    def ride_admit(self, a: Admission) -> Any: ...

    async def admitted(self, a: Admission, rider: Any) -> Admitted: ...

    def admitted_now(self, a: Admission, rider: Any) -> Admitted:
        """:meth:`admitted` of a rider whose reply is in (``rider.done()``), without an await."""

    def ride_finish(self, a: Admission, tokens: int, nanos: int) -> Any: ...

    async def landed(self, rider: Any) -> None: ...

    def drop(self, rider: Any) -> bool: ...

    async def finish_again(self, a: Admission, tokens: int, nanos: int) -> bool:
        """Send again a ``FINISH`` of ``a`` whose round trip failed (whether it ran is unknown),
        guarded so that it counts once; True: it settled now, False: it had run."""


class UsageBackend(Protocol):
    """The atomic operations budgets and rate limits need of a store: one per step of a call
    (``admit`` before it, ``finish`` after it; ``give_back`` for an admission whose request was
    never sent: :func:`.rules.give_back`)."""

    #: The ``finish`` operations of this store running as tasks of their own.
    settles: Settles
    #: Riding round trips the call makes anyway (None: each operation is a round trip of its own).
    rides: Rides | None

    async def admit(self, a: Admission) -> Admitted: ...

    async def finish(self, a: Admission, tokens: int, nanos: int) -> None: ...

    async def give_back(self, a: Admission) -> None: ...

    async def renew(self, a: Admission) -> None:
        """:func:`.rules.renew`: a call still in flight keeps its reservation and lease."""

    async def hold_off(self, key: str, wait_ms: float) -> None: ...

    async def read(self, name: str) -> rules.Doc | None: ...


def now_ms() -> int:
    return int(time.time() * 1000)


def _no_entries(name: str, head: rules.Doc | None) -> list[tuple[str, str, float | str]]:
    return []  # a hold-off changes a limiter's clocks only


class DocsUsage:
    """The rules of :mod:`.rules` on locked documents (memory, file, SQL stores). A step names
    the entries of the documents' maps it reads (:data:`.rules.Wanted`): a store keeping them as
    rows (:mod:`.sql_docs`) reads those only, so its cost does not grow with the calls in flight.
    ``rename``: the name the store keeps a tenant's or call's entry under (:func:`.rows.entry_name`
    on SQL), applied to every admission first."""

    rides: Rides | None = None

    def __init__(self, docs: DocBackend, rename: Callable[[str], str] | None = None) -> None:
        self.docs = docs
        self.settles = Settles()
        self._rename = rename

    def _named(self, a: Admission) -> Admission:
        if self._rename is None:
            return a
        return a._replace(rid=self._rename(a.rid), tenant=self._rename(a.tenant))

    async def admit(self, a: Admission) -> Admitted:
        a, now = self._named(a), now_ms()

        def change(docs: dict[str, rules.Doc | None]) -> tuple[dict[str, rules.Doc], Admitted]:
            return rules.admit(docs, a, now)

        return await self.docs.update(
            "admit model call", a.names, change, rules.admit_wants(a, now)
        )

    async def finish(self, a: Admission, tokens: int, nanos: int) -> None:
        a, now = self._named(a), now_ms()

        def change(docs: dict[str, rules.Doc | None]) -> tuple[dict[str, rules.Doc], None]:
            return rules.finish(docs, a, tokens, nanos, now), None

        await self.docs.update("finish model call", a.names, change, rules.finish_wants(a))

    async def give_back(self, a: Admission) -> None:
        a, now = self._named(a), now_ms()

        def change(docs: dict[str, rules.Doc | None]) -> tuple[dict[str, rules.Doc], None]:
            return rules.give_back(docs, a, now), None

        wanted = rules.finish_wants(a, unsent=True)
        await self.docs.update("give back model call", a.names, change, wanted)

    async def renew(self, a: Admission) -> None:
        a, now = self._named(a), now_ms()

        def change(docs: dict[str, rules.Doc | None]) -> tuple[dict[str, rules.Doc], None]:
            return rules.renew(docs, a, now), None

        await self.docs.update("renew model call", a.names, change, rules.finish_wants(a))

    async def hold_off(self, key: str, wait_ms: float) -> None:
        def change(docs: dict[str, rules.Doc | None]) -> tuple[dict[str, rules.Doc], None]:
            return {key: rules.hold_off(docs[key], float(now_ms()), wait_ms)}, None

        await self.docs.update("hold off rate limit", [key], change, _no_entries)

    async def read(self, name: str) -> rules.Doc | None:
        def change(
            docs: dict[str, rules.Doc | None],
        ) -> tuple[dict[str, rules.Doc], rules.Doc | None]:
            return {}, docs[name]

        return await self.docs.update("read usage", [name], change)


#: Budgets and limiters live under this prefix: its first segments are the cluster hash tag, so a
#: call's budgets and its limiter are one script on a Redis Cluster too.
LEDGER = ("usage", "ledger", "budgets")
#: Budget and limiter names a Redis backend keeps computed.
NAME_CACHE_SIZE = 4096


#: A ``FINISH`` whose round trip failed is sent again (guarded: it counts once) up to this many
#: times while the store is unavailable, the first at once, then after a pause from
#: :data:`RESEND_PAUSE` s doubling up to :data:`RESEND_PAUSE_MAX` s (about 7 s in all).
RESENDS = 8
RESEND_PAUSE = 0.1
RESEND_PAUSE_MAX = 2.0

#: The arguments of ``ADMIT`` (:meth:`RedisUsage._args`) and ``FINISH`` (a riding one:
#: :meth:`RedisUsage._end_args`, not unsent) that change from call to call of one shape: the
#: reservation id, the amounts (and the estimate a ``FINISH`` corrects).
ADMIT_SLOTS = (1, 2, 3)
FINISH_SLOTS = (1, 2, 3, 4)
_RATES = attrgetter("rpm", "tpm", "concurrent", "burst")
_LIMIT = attrgetter("name", "max_tokens", "max_nanos")
#: ``ADMIT``'s reply when it granted without a wait.
_GRANTED_REPLY = [0, b"0"]


class _Shape:
    """The Redis keys of an admission's budgets and limiter, and the ``ADMIT`` and riding
    ``FINISH`` of its budgets, limiter, rates and tenant packed once (None: not packed ahead)."""

    __slots__ = ("admit", "finish", "keys")

    def __init__(self, keys: list[str], admit: Any, finish: Any) -> None:
        self.keys, self.admit, self.finish = keys, admit, finish


class RedisUsage:
    """The same rules as Lua scripts (:mod:`.redis_lua`): one round trip per step."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self._admit = store.register_script(redis_lua.ADMIT)
        self._finish = store.register_script(redis_lua.FINISH)
        self._hold = store.register_script(redis_lua.HOLD_OFF)
        self._renew = store.register_script(redis_lua.RENEW)
        self._names: dict[tuple[str, str], str] = {}
        self._shapes: dict[tuple[object, ...], _Shape] = {}
        self.settles = Settles()
        self.rides: Rides | None = self

    def _budget(self, name: str) -> str:
        return self._name("b", name)

    def _limiter(self, key: str) -> str:
        return self._name("l", key)

    def _name(self, kind: str, name: str) -> str:
        """The Redis name of budget (``kind`` "b") or limiter ("l") ``name``, kept (a hash and an
        escape per call is a tenth of a millisecond; a process uses few budgets and limiters at a
        time)."""
        found = self._names.get((kind, name))
        if found is None:
            if len(self._names) >= NAME_CACHE_SIZE:
                self._names.clear()
            parts = (*LEDGER, doc_id(name)) if kind == "b" else (*LEDGER, "limiter", doc_id(name))
            found = self._names[(kind, name)] = self.store.redis_name(parts)
        return found

    def _keys(self, a: Admission) -> list[str]:
        return self._shape(a).keys

    def _shape(self, a: Admission) -> _Shape:
        """What the ``ADMIT`` and ``FINISH`` of every admission of ``a``'s budgets, limiter, rates
        and tenant send alike, kept (worked out at the first of them). Kept by the values of
        those (read in C: no dataclass hash and compare per call), so a number and its float
        (600 and 600.0, the same to the scripts) share one."""
        key = (a.key, a.tenant, _RATES(a.rates), *map(_LIMIT, a.limits))
        shape = self._shapes.get(key)
        if shape is None:
            if len(self._shapes) >= NAME_CACHE_SIZE:
                self._shapes.clear()
            shape = self._shapes[key] = self._new_shape(a)
        return shape

    def _new_shape(self, a: Admission) -> _Shape:
        keys = [self._budget(b.name) for b in a.limits]
        keys += [self._limiter(a.key)] if a.key else []
        admit = self.store.template(self._admit, keys, self._args(a), ADMIT_SLOTS)
        finish = self.store.template(self._finish, keys, self._end_args(a, 0, 0, 0), FINISH_SLOTS)
        return _Shape(keys, admit, finish)

    def _args(self, a: Admission) -> list[object]:
        r = a.rates
        args: list[object] = [len(a.limits), a.rid, a.tokens, a.nanos, rules.RESERVATION_TTL_MS]
        args += [1 if a.key else 0, r.rpm or 0, r.tpm or 0, r.concurrent or 0, r.burst, a.tenant]
        args += ["-"]
        for b in a.limits:
            args += [-1 if b.max_tokens is None else b.max_tokens]
            args += [-1 if b.max_nanos is None else b.max_nanos]
        return args

    async def admit(self, a: Admission) -> Admitted:
        return _admitted(a, await self.store.run_script(self._admit, self._keys(a), self._args(a)))

    # -- riding the call's own round trips (:class:`Rides`; ``agentscope_teams.store._redis_riders``)

    def open_rides(self) -> object | None:
        token: object | None = self.store.open_rides()
        return token

    def close_rides(self, token: object) -> None:
        self.store.close_rides(token)

    def ride_admit(self, a: Admission) -> Any:
        """The ``ADMIT`` of ``a`` queued for this context's next write (None: not queued): packed
        from its shape's template, filled with its id and amounts."""
        shape = self._shape(a)
        rider = self._ride_packed(shape.admit, (a.rid, a.tokens, a.nanos))
        if rider is not None:
            return rider
        return self.store.ride(self._admit, shape.keys, self._args(a))

    async def admitted(self, a: Admission, rider: Any) -> Admitted:
        """The answer of a riding ``ADMIT`` (sent alone now if no round trip took it)."""
        return _admitted(a, await self.store.land(rider))

    def admitted_now(self, a: Admission, rider: Any) -> Admitted:
        return _admitted(a, rider.result())

    def ride_finish(self, a: Admission, tokens: int, nanos: int) -> Any:
        """The ``FINISH`` of ``a`` queued for this context's next write (None: not queued), as
        :meth:`ride_admit`."""
        shape = self._shape(a)
        rider = self._ride_packed(shape.finish, (a.rid, tokens, nanos, a.tokens))
        if rider is not None:
            return rider
        return self.store.ride(self._finish, shape.keys, self._end_args(a, tokens, nanos, 0))

    def _ride_packed(self, template: Any, values: tuple[Any, ...]) -> Any:
        """A rider of ``template`` (a shape's, None: not packed ahead) filled with ``values``
        (None: not queued that way: the caller rides the command as any other)."""
        return None if template is None else self.store.ride_packed(template, values)

    async def landed(self, rider: Any) -> None:
        await self.store.land(rider)

    def drop(self, rider: Any) -> bool:
        return bool(self.store.drop(rider))

    async def finish_again(self, a: Admission, tokens: int, nanos: int) -> bool:
        """Send again the ``FINISH`` of ``a`` whose round trip failed (a lost connection, a
        timeout, a cancellation: whether the server ran it is unknown), alone and guarded
        (:data:`.redis_lua.FINISH`'s ``again``: it settles only a reservation still held, so a
        ``FINISH`` that ran is not counted twice); up to :data:`RESENDS` times while the store
        is unavailable, then its error. True: it settled now; False: nothing was held (it had
        run, or the reservation had expired)."""
        args = [*self._end_args(a, tokens, nanos, 0)[:-1], 1]
        return bool(await self._resent(a, args, RESENDS))

    async def _resent(self, a: Admission, args: list[object], tries: int) -> Any:
        """``FINISH`` of ``a`` with ``args`` (a step that counts once however often it runs),
        sent up to ``tries`` times while the store is unavailable, pausing between (the first
        at once); its reply, or the last error."""
        pause = RESEND_PAUSE
        for attempt in range(tries):
            if attempt:
                await anyio.sleep(pause)
                pause = min(pause * 2, RESEND_PAUSE_MAX)
            try:
                return await self.store.run_script(self._finish, self._keys(a), args)
            except StoreUnavailableError as exc:
                if attempt == tries - 1:
                    raise
                log.info("a usage step failed (%s); sending it again", exc)
        raise AssertionError("unreachable")  # pragma: no cover

    async def finish(self, a: Admission, tokens: int, nanos: int) -> None:
        await self._end(a, tokens, nanos, 0)

    async def give_back(self, a: Admission) -> None:
        """:func:`.rules.give_back`; sent again while the store is unavailable (up to
        :data:`RESENDS` times: it changes only what ``a`` still holds, so it counts once), else
        its reservation and lease would stay held until they expire."""
        await self._resent(a, self._end_args(a, 0, 0, 1), 1 + RESENDS)

    def _end_args(self, a: Admission, tokens: int, nanos: int, unsent: int) -> list[object]:
        """``FINISH``'s arguments (:data:`.redis_lua.FINISH`; not ``again``: the last one)."""
        leased = 1 if a.key and a.rates.concurrent else 0
        args: list[object] = [len(a.limits), a.rid, tokens, nanos, a.tokens, 1 if a.key else 0]
        return [*args, a.rates.tpm or 0, unsent, a.tenant, leased, 0]

    async def _end(self, a: Admission, tokens: int, nanos: int, unsent: int) -> None:
        args = self._end_args(a, tokens, nanos, unsent)
        await self.store.run_script(self._finish, self._keys(a), args)

    async def renew(self, a: Admission) -> None:
        leased = 1 if a.key and a.rates.concurrent else 0
        args = [len(a.limits), a.rid, rules.RESERVATION_TTL_MS, leased]
        await self.store.run_script(self._renew, self._keys(a), args)

    async def hold_off(self, key: str, wait_ms: float) -> None:
        await self.store.run_script(self._hold, [self._limiter(key)], [wait_ms])

    async def read(self, name: str) -> rules.Doc | None:
        """The totals of budget ``name`` (None: never written); its reservations are not read."""
        fields = ("ut", "un", "rt", "rn")
        raw = await self.store.call(lambda c: c.hmget(self._budget(name), fields))
        if all(v is None for v in raw):
            return None
        return {f: int(v or 0) for f, v in zip(fields, raw, strict=True)}


def _admitted(a: Admission, reply: Any) -> Admitted:
    """The answer of an ``ADMIT`` reply."""
    if reply == _GRANTED_REPLY:
        return GRANTED
    at = int(reply[0])
    if at == 0:
        wait_ms = float(reply[1])
        return GRANTED if wait_ms == 0 else Admitted(wait_ms=wait_ms)
    unit = reply[1].decode() if isinstance(reply[1], bytes) else str(reply[1])
    numbers = [int(float(x)) for x in reply[2:5]]
    return Admitted(refusal=Refusal(a.limits[at - 1].name, unit, *numbers))


_BACKENDS: weakref.WeakKeyDictionary[object, UsageBackend] = weakref.WeakKeyDictionary()


def usage_backend(store: object) -> UsageBackend:
    """The usage backend of ``store`` (one per store object)."""
    found = _BACKENDS.get(store)
    if found is None:
        if _is_redis(store):
            found = RedisUsage(store)  # type: ignore[arg-type]
        else:
            docs = docs_for(store)
            found = DocsUsage(docs)
            dialect = getattr(docs, "dialect", None)
            if dialect == "postgresql":
                from .sql_pg import PgUsage  # one statement per step (see its module)

                found = PgUsage(docs)  # type: ignore[arg-type]
            elif dialect is not None:  # MariaDB/MySQL, SQLite: entries kept as rows by name
                from .rows import entry_name, mysql_entry_name

                found = DocsUsage(docs, mysql_entry_name if dialect == "mysql" else entry_name)
        _BACKENDS[store] = found
        land_before_close(store, found.settles)  # closing the store lands its settles
    return found


def known_backend(store: object) -> UsageBackend | None:
    """The usage backend of ``store`` if one was made (None: it governed no call)."""
    return _BACKENDS.get(store)


def _is_redis(store: object) -> bool:
    try:
        from ..store.redis import RedisStore
    except ImportError:  # pragma: no cover - the redis extra is not installed
        return False
    return isinstance(store, RedisStore)
