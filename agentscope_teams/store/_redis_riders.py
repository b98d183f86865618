"""Riders: script calls that go to a standalone Redis server in the socket write of a round trip
the caller makes anyway (issue 27).

A layer above queues a script call with :meth:`RedisConnection.ride
<agentscope_teams.store._redis_conn.RedisConnection.ride>` inside a riding block
(:func:`open_rides`, a :class:`contextvars.ContextVar` of this context's queue): the next write
script this context sends to the same store (``_write``: a put, a lease's ``create_then_get``, an
append, ``run_script``) takes every rider queued for that store and sends them first, then its own
command, as one pipeline (:meth:`~._redis_lean.LeanRedis.execute_many`: one socket write, the
replies read in order). Each rider gets its reply (:meth:`Rider.result`), or its own
``ResponseError`` (one command's error does not fail the others; ``NOSCRIPT`` loads the script and
sends that command again, alone). A rider nobody took is sent alone when its result is asked for
(:meth:`RedisConnection.land`), or dropped unsent (:meth:`RedisConnection.drop`): nothing waits on
a timer. When the carrier fails after taking its riders (a lost connection, a timeout, a
cancellation), whether the server ran them is unknown: their reply is a
:class:`~agentscope_teams.errors.StoreUnavailableError` and :attr:`Rider.lost` is set.

A rider queued by :meth:`RedisConnection.ride_packed
<agentscope_teams.store._redis_conn.RedisConnection.ride_packed>` carries its command packed
already, from a template of :mod:`._redis_pack` (the carrier packs only its own).

Only a store on one server without ``replica_acks``, whose client is the lean one, under asyncio,
queues riders; elsewhere :meth:`~RedisConnection.ride` returns None and the caller sends its
command as before (on a cluster the keys live on other nodes; with ``replica_acks`` each write is
followed by ``WAIT``).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from asyncio import _get_running_loop
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import StoreUnavailableError
from ._redis_pack import Template


class Riders:
    """The riders of one riding block waiting for a round trip (by the ``id`` of the store they
    go to, in the order queued), and its event loop."""

    __slots__ = ("loop", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: dict[int, list[Rider]] = {}


#: The riding block of this context (None: riders are not queued).
RIDERS: contextvars.ContextVar[Riders | None] = contextvars.ContextVar(
    "agentscope_teams_redis_riders", default=None
)


class Rider:
    """One script call waiting to ride a round trip to ``store``, then its reply: :meth:`done`,
    :meth:`result`, or awaited through :attr:`future` (made only when asked for: a carrier
    answers most riders before anyone waits on them).

    Its call is ``call`` (a :class:`~._redis_pack.Template`, or a :class:`Call`) with ``values``
    at the template's slots; ``wire`` is the command packed by the template (None: packed when
    sent). A rider is its command as a sequence (``rider[0]`` is ``"EVALSHA"``): a pipeline
    sends it as one."""

    #: (Not slotted: these start on the class, so a rider is made setting five attributes.)
    #: The future of :attr:`future` once asked for; (reply, None) or (None, error) once answered.
    _future: asyncio.Future[Any] | None = None
    _outcome: tuple[Any, BaseException | None] | None = None
    #: ``time.monotonic()`` when a round trip took it (None: not yet): the server runs it after.
    sent: float | None = None
    #: Taken by a round trip that failed: whether the server ran it is unknown.
    lost = False

    def __init__(
        self, queue: Riders, store: object, call: Any, values: tuple[Any, ...], wire: bytes | None
    ) -> None:
        self.queue = queue
        self.store = store
        self.call = call
        self.values = values
        self.wire = wire

    @property
    def script(self) -> Any:
        return self.call.script

    @property
    def keys(self) -> Sequence[Any]:
        return self.call.keys  # type: ignore[no-any-return]

    def arguments(self) -> list[Any]:
        """The script's arguments."""
        return self.call.arguments(self.values)  # type: ignore[no-any-return]

    def command(self) -> tuple[Any, ...]:
        call = self.call
        return call.script.command(call.keys, call.arguments(self.values))  # type: ignore[no-any-return]

    def __getitem__(self, i: Any) -> Any:
        return self.command()[i]

    def __len__(self) -> int:
        return len(self.command())

    def __iter__(self) -> Iterator[Any]:
        return iter(self.command())

    @property
    def future(self) -> asyncio.Future[Any]:
        """A future of its reply (or error), on the riding block's event loop."""
        future = self._future
        if future is None:
            future = self._future = self.queue.loop.create_future()
            if self._outcome is not None:
                _settle(future, *self._outcome)
        return future

    def done(self) -> bool:
        """Whether its reply (or error) is in."""
        return self._outcome is not None

    def result(self) -> Any:
        """Its reply, or its error raised (once :meth:`done`)."""
        assert self._outcome is not None
        reply, error = self._outcome
        if error is not None:
            raise error
        return reply

    @property
    def waiting(self) -> bool:
        """Queued, not sent yet."""
        return self in self.queue.waiting.get(id(self.store), ())

    def leave(self) -> bool:
        """Leave the queue (True: it was waiting, nothing was sent; :attr:`sent` is now)."""
        waiting = self.queue.waiting
        mine = waiting.get(id(self.store))
        if mine is None or self not in mine:
            return False
        mine.remove(self)
        if not mine:
            del waiting[id(self.store)]
        self.sent = time.monotonic()
        return True

    def back(self) -> None:
        """Queue it again, unsent (a round trip took it and the server did not run it)."""
        self.sent = None
        self.queue.waiting.setdefault(id(self.store), []).append(self)

    def answer(self, reply: Any) -> None:
        if self._outcome is None:
            self._outcome = (reply, None)
            if self._future is not None:
                self._future.set_result(reply)

    def fail(self, error: BaseException, lost: bool = False) -> None:
        """Its reply is ``error`` (a cancellation or another BaseException: the outcome is
        unknown, a StoreUnavailableError)."""
        self.lost = self.lost or lost
        if not isinstance(error, Exception):
            error = StoreUnavailableError(
                f"a Redis command riding a round trip was not answered ({type(error).__name__}): "
                "whether the server ran it is unknown"
            )
        if self._outcome is None:
            self._outcome = (None, error)
            if self._future is not None:
                _settle(self._future, None, error)


def _settle(future: asyncio.Future[Any], reply: Any, error: BaseException | None) -> None:
    if error is None:
        future.set_result(reply)
    else:
        future.set_exception(error)
        future.exception()  # retrieved: a rider nobody asks about logs nothing


def open_rides() -> contextvars.Token[Riders | None] | None:
    """Start a riding block here (None: no asyncio loop runs); end it with :func:`close_rides`."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return RIDERS.set(Riders(loop))


def close_rides(token: contextvars.Token[Riders | None]) -> None:
    """End the riding block (riders still queued stay with their owners: sent or dropped by
    them)."""
    RIDERS.reset(token)


class Call:
    """A script call of a rider not packed ahead: ``script`` on ``keys`` and ``args``."""

    __slots__ = ("args", "keys", "script")

    def __init__(self, script: Any, keys: Sequence[Any], args: Sequence[Any]) -> None:
        self.script, self.keys, self.args = script, keys, args

    def arguments(self, values: tuple[Any, ...]) -> list[Any]:
        return [*self.args]


def queue(store: object, script: Any, keys: Sequence[Any], args: Sequence[Any]) -> Rider | None:
    """A rider of ``script`` queued for ``store`` in this context's riding block (None: none)."""
    riders = RIDERS.get()
    if riders is None:
        return None
    rider = Rider(riders, store, Call(script, keys, args), (), None)
    riders.waiting.setdefault(id(store), []).append(rider)
    return rider


def queue_packed(store: object, template: Template, values: tuple[Any, ...]) -> Rider | None:
    """A rider of ``template``'s command with ``values`` at its slots (:mod:`._redis_pack`),
    queued for ``store`` in this context's riding block (None: none, or a value the template does
    not pack)."""
    riders = RIDERS.get()
    if riders is None:
        return None
    wire = template.fill(values)
    if wire is None:
        return None
    rider = Rider(riders, store, template, values, wire)
    riders.waiting.setdefault(id(store), []).append(rider)
    return rider


def take(store: object) -> list[Rider] | None:
    """The riders queued for ``store`` in this context, taken off the queue (None: none)."""
    riders = RIDERS.get()
    if riders is None or not riders.waiting or _get_running_loop() is not riders.loop:
        return None
    mine = riders.waiting.pop(id(store), None)
    if mine is None:
        return None
    now = time.monotonic()
    for rider in mine:
        rider.sent = now
    return mine
