"""Settling a finished model call beside the caller's next work.

A governed call's second store operation (``FINISH``: count what the call used on its budgets, end
its rate-limit lease) returns nothing the caller needs, so it runs as a task of its own and the call
goes on at once: its tool step, its session save. Each such settle is owned twice:

* by the :class:`Settles` of its store's usage backend, which logs and counts a failure, keeps
  the task referenced until it ends, and is flushed by :meth:`UsageGovernor.aclose
  <agentscope_teams.usage.UsageGovernor.aclose>`, ``HarnessAgent.aclose`` (:func:`flush`) and
  the store's own close (:mod:`agentscope_teams.store.closing`: bounded, what is left logged);
* by the :class:`Pending` of the call's scope (one per ``UsageGovernor.bind``), which
  ``HarnessAgent.call`` and ``ReActAgent.reply`` wait for before they return (:func:`settled`), and
  which a later call of the same scope waits for when the store answers that calls in flight hold
  what it asks for.

On Redis (one server) the settle of a call's last model call, whose answer ends the loop, is not
a task: its ``FINISH`` rides the call's last session save (:class:`Later`, a rider of
:mod:`agentscope_teams.store._redis_riders`, queued by :meth:`~.governor.ModelCall._settle_soon`); it is
landed (in line when the save brought its reply back, else sent alone as a task) when the scope or
the store's settles are waited for, whichever comes first.

A ``FINISH`` whose round trip failed (a lost connection, a timeout, a cancellation: whether the
server ran it is unknown) is sent again alone, guarded so that it counts once
(:meth:`~.backend.Rides.finish_again`), while the store answers; else its reservation would stay
held until it expires.

The reservation stays held until the settle lands (another call sees it in flight), so a budget is
still overshot by at most one call. Under an event loop other than asyncio's (anyio on trio) there is
no task to hand a settle to, and it runs in line, as it did before.
"""

from __future__ import annotations

import abc
import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Iterable

import anyio

log = logging.getLogger(__name__)

Task = asyncio.Task[None]


class Settles:
    """The settles of one store in flight, and how many were started and how many failed."""

    #: What they are, for the store's close (:mod:`agentscope_teams.store.closing`).
    what = "settles of model calls' usage"

    def __init__(self) -> None:
        self._tasks: set[Task] = set()
        self._later: set[Later] = set()
        #: Settles handed to a task (or riding a round trip: :meth:`defer`) since this object
        #: was made.
        self.started = 0
        #: Of those, the ones whose store operation failed (each logged as a warning).
        self.failed = 0

    @property
    def pending(self) -> int:
        return len(self._tasks) + len(self._later)

    def start(self, settle: Callable[[], Awaitable[None]]) -> Task | None:
        """Run ``settle()`` as a task of its own (None: no asyncio loop runs; await it in line)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        self.started += 1
        return self._task(loop, settle)

    def _task(self, loop: asyncio.AbstractEventLoop, settle: Callable[[], Awaitable[None]]) -> Task:
        # an empty context: the settle is no part of the caller's trace span or store operation
        ctx = contextvars.Context()
        task = loop.create_task(self._run(settle), name="settle model call", context=ctx)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def defer(self, later: Later, pending: Pending) -> None:
        """Hold ``later`` (a settle whose store operation rides a later round trip) until it is
        landed (:meth:`land`), here and in ``pending`` (the scope's settles)."""
        later.loop, later.settles = asyncio.get_running_loop(), self
        self._later.add(later)
        self.started += 1
        pending.add_later(later)

    async def land(self, later: Later) -> Task | None:
        """Run the deferred settle: in line when its reply is in (None), else as a task (the
        riding operation is sent alone); the task it runs in if it was landed already."""
        if later not in self._later:
            return later.task
        self._later.discard(later)
        if later.ready():
            await self._run(later.settle)
            return None
        later.task = self._task(later.loop, later.settle)
        return later.task

    def land_now(self, later: Later) -> bool:
        """:meth:`land` without an await when ``later``'s reply is in (True: landed by
        :meth:`Later.now`, a failure logged and counted as :meth:`run` does); False: :meth:`land`
        it."""
        if later not in self._later or not later.ready():
            return False
        self._later.discard(later)
        try:
            later.now()
        except Exception as exc:  # the call is done: its caller must not see the store's error
            self._failed(exc)
        return True

    async def run(self, settle: Callable[[], Awaitable[None]]) -> None:
        """Run ``settle()`` here, with a failure logged and counted as a task's would be."""
        await self._run(settle)

    async def beside(self, pending: Pending, settle: Callable[[], Awaitable[None]]) -> Task | None:
        """Run ``settle()`` as a task ``pending`` (its scope) waits for, and return the task; with
        no asyncio loop, here, shielded from cancellation (None)."""
        task = self.start(settle)
        if task is not None:
            pending.add(task)
            return task
        with anyio.CancelScope(shield=True):
            await self._run(settle)
        return None

    async def _run(self, settle: Callable[[], Awaitable[None]]) -> None:
        try:
            await settle()
        except Exception as exc:  # the call is done: its caller must not see the store's error
            self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        self.failed += 1
        log.warning("could not settle a model call's usage: %s", exc)

    async def flush(self) -> None:
        """Wait for every settle this event loop started so far."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # another event loop (trio): no settle ran as a task
            return
        for later in [x for x in self._later if x.loop is loop]:
            await self.land(later)
        await _wait([t for t in self._tasks if t.get_loop() is loop])


class Later(abc.ABC):
    """A settle deferred until landed (:meth:`Settles.defer`): its owner says when its reply is in
    (:meth:`ready`) and lands it with an await (:meth:`settle`: the riding operation sent alone if
    no round trip took it) or, its reply in, without one (:meth:`now`)."""

    # No __slots__: ``task`` is set only when it is landed as a task.
    #: The event loop and the :class:`Settles` it was deferred on (set by :meth:`Settles.defer`).
    loop: asyncio.AbstractEventLoop
    settles: Settles
    #: The task it runs in once landed as one.
    task: Task | None = None

    @abc.abstractmethod
    def ready(self) -> bool:
        """Whether the reply of its riding operation is in."""

    @abc.abstractmethod
    async def settle(self) -> None:
        """Land it: wait for its reply (sent alone if no round trip took it)."""

    @abc.abstractmethod
    def now(self) -> None:
        """What :meth:`settle` does, without an await: its reply is in (:meth:`ready`)."""


class Pending:
    """The settles one scope (a bound governor: one ``HarnessAgent.call``) started and has not
    waited for."""

    # No __slots__ and no __init__: one is made per bound block, most hold one settle or none.
    _tasks: list[Task] | tuple[()] = ()
    #: Deferred settles (:meth:`Settles.defer`), landed by :meth:`wait`.
    _later: list[Later] | tuple[()] = ()

    def add(self, task: Task) -> None:
        self._tasks = [*[t for t in self._tasks if not t.done()], task]

    def add_later(self, later: Later) -> None:
        """A deferred settle (:meth:`Settles.defer`): landed by :meth:`wait`."""
        self._later = [*self._later, later]

    async def wait(self) -> bool:
        """Land the deferred settles and wait for them all; True if any was still running.
        Cancelling the wait leaves them running (and still pending here)."""
        later = self._later
        if not later and not self._tasks:
            return False
        self._later = ()
        for one in later:  # landed in order (their tasks started here)
            settles = one.settles
            if not settles.land_now(one):
                task = await settles.land(one)
                if task is not None:
                    self._tasks = [*self._tasks, task]
        if not self._tasks:
            return bool(later)
        tasks, self._tasks = [t for t in self._tasks if not t.done()], ()
        if not tasks:
            return bool(later)
        try:
            await _wait(tasks)
        except BaseException:
            self._tasks = [*self._tasks, *tasks]
            raise
        return True


async def _wait(tasks: Iterable[Task]) -> None:
    """Wait for ``tasks`` to end; being cancelled does not cancel them (``asyncio.wait``)."""
    found = list(tasks)
    if found:
        await asyncio.wait(found)
