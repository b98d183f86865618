"""Early admission: a ``HarnessAgent.call`` sends its first ``ADMIT`` beside its session lease and load.

Before the first request of a call the agent takes the session's lease and loads it (one round
trip). :func:`admit_early` sends the call's ``ADMIT`` at the same time, as a task of its own, with a
reservation worked out from what is known before the load: this process's last sight of the
session's context (the last request's input and answer, kept for :data:`HINTS_SIZE` sessions, least
recently used first out) or, for a session it has not seen, the agent's system prompt and tools;
plus the new input, :data:`SLACK_TOKENS` for what the call adds before its request (injections,
hook context, extensions' prompt and tools) and the governor's max output tokens.

When the first request is built, :func:`~.governor.model_call` takes it (:meth:`Early.take`) if the
store granted it at once, it asks at least what the request's own admission asks (the same budgets,
limiter, rates and tenant; no fewer tokens or nano-dollars: the one-call overshoot bound holds) and,
when its rate limit counts requests or tokens per minute, it was sent at most :data:`TURN_AHEAD`
seconds before (a turn taken early moves the request later than the limiter placed it; this bounds
by how much, e.g. after a slow ``UserPromptSubmit`` hook). Otherwise it is released beside the call
(a settle of nothing, as a task the call's :func:`~.governor.settled` waits for) and the request
admits as before. The early ``ADMIT`` asks once: a refusal or a wait for a turn is never raised
here, the request's own admission answers (waits, backs off, raises) as it always did; the early
one then reserved nothing. An early admission no request took (the call failed or was cancelled
before its first request) is released when the call ends, once its ``ADMIT`` has landed; so
nothing stays reserved past the call. A released one gives its rate-limit turn back too when no
other turn was taken since (:func:`.rules.give_back`: exact; otherwise the turn stays spent and the
limiter errs slow). Under an event loop other than asyncio's nothing is sent early. :class:`Counts`
counts the early admissions sent, taken and released.

On a store whose backend has :class:`~.backend.Rides` (Redis on one server) the ``ADMIT`` is not a
task: it is queued (the call's riding block, opened here) and goes in the same socket write as the
lease + load (:mod:`agentscope_teams.store._redis_riders`); :meth:`Early.take` reads its answer
(sent alone then if no round trip took it). Its age for :data:`TURN_AHEAD` counts from when the
round trip took it, just before writing it (the server runs it after that): the bound holds. A riding ``ADMIT`` of a
call that ends before its lease is dropped unsent (nothing to give back); one whose round trip
failed (unknown whether it ran) is given back, which is harmless if it never ran. The riding block
also carries the call's last ``FINISH`` (:meth:`~.governor.ModelCall._settle_soon`).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Hashable
from types import TracebackType
from typing import Any, Protocol

from ..message import Msg
from ..model.base import ChatModel, ModelResponse
from .backend import Rides
from .estimate import PER_MESSAGE, message_chars, output_tokens, tokens, tool_chars
from .governor import EARLY, SCOPE, UNGOVERNED, Scope, Terms, Ungoverned, asks, new_admission
from .limiter import settle_of
from .rules import GRANTED, Admission, Admitted

#: Longest time (s) from sending an early ``ADMIT`` that takes a requests/min or tokens/min turn
#: to the request it admits; past it the turn is given back and taken again. A session's lease and
#: load take 0.3-10 ms (Redis to MariaDB, a loaded machine: up to ~70 ms for a process's first
#: call on SQL); a provider's bucket of even 2 requests tolerates one interval of jitter (100 ms at
#: 600/min), and the limiter's margin (5 %) the drift.
TURN_AHEAD = 0.05
#: Tokens reserved beyond the estimate for what a call adds before its first request.
SLACK_TOKENS = 1024
#: Sessions whose context size this process keeps (least recently used first out).
HINTS_SIZE = 4096
#: Characters a plain-text input adds beyond its text in a request (its message's JSON).
TEXT_OVERHEAD = 40
#: The answer of an early ``ADMIT`` task that failed or was cancelled (given back: it may have
#: run).
_LOST = RuntimeError("the early ADMIT failed")

_HINTS: OrderedDict[Hashable, int] = OrderedDict()


class Loop(Protocol):
    """What the early estimate reads of an agent's loop (a ``ReActAgent``)."""

    model: ChatModel
    system_prompt: str

    @property
    def toolkit(self) -> Any: ...


class Counts:
    """Early admissions since the process started: sent, taken by their request, released."""

    sent = 0
    taken = 0
    released = 0


def hint(session: Hashable) -> int | None:
    """The input tokens of ``session``'s last request in this process, with its answer."""
    found = _HINTS.get(session)
    if found is not None:
        _HINTS.move_to_end(session)
    return found


def _keep_hint(session: Hashable, tokens: int) -> None:
    _HINTS[session] = tokens
    _HINTS.move_to_end(session)
    if len(_HINTS) > HINTS_SIZE:  # one added at a time
        _HINTS.popitem(last=False)


def estimate_early(loop: Loop, session: Hashable, input: object) -> int:
    """Input tokens the first request of a call of ``loop`` on ``session`` may count for."""
    base = hint(session)
    if base is None:  # a session not seen here: the agent's own prompt and tools
        toolkit = loop.toolkit
        chars = len(loop.system_prompt)
        if toolkit is not None and len(toolkit):
            chars += tool_chars(toolkit.schemas())  # each schema measured once
        base = tokens(chars) + PER_MESSAGE
    if isinstance(input, str):
        return base + tokens(len(input) + TEXT_OVERHEAD) + (PER_MESSAGE + SLACK_TOKENS)
    return base + _input_tokens(input) + SLACK_TOKENS


def _input_tokens(input: object) -> int:
    """The tokens of a call's input that is not plain text (a message or a list of them)."""
    msgs = [input] if isinstance(input, Msg) else input if isinstance(input, list) else []
    chars = sum(message_chars(m) for m in msgs if isinstance(m, Msg))
    return tokens(chars) + PER_MESSAGE * len(msgs)


def _granted(answer: Admitted | BaseException | None) -> bool:
    """Whether the early ``ADMIT`` reserved and took its turn (a store error: it did not)."""
    return isinstance(answer, Admitted) and answer.refusal is None and answer.wait_ms <= 0


class Early:
    """One call's early admission (the async context manager :func:`admit_early` returns): its
    ``ADMIT`` (riding the session lease's round trip, or a task), what it asked and when, and its
    answer once landed."""

    # No __slots__: what most calls leave as it was is a class attribute, not set per call.
    #: The admission sent early (None: none was).
    a: Admission | None = None
    #: The call's riding block (:meth:`.Rides.open_rides`; None: none), the ``ADMIT`` queued to
    #: ride its next write (the lease; None: a task of its own), that task.
    ride: object | None = None
    rides: Rides  # set when it rides
    rider: Any = None
    task: asyncio.Task[Admitted] | None = None
    #: The ``ADMIT``'s answer or error once landed (None: not yet).
    answer: Admitted | BaseException | None = None
    #: Neither taken by a request nor released yet.
    open = True
    #: The input estimate and answer of the call's last model call (:meth:`seen`).
    last: tuple[int, ModelResponse | None] | None = None

    def __init__(self, scope: Scope, loop: Loop, session: Hashable, input: object) -> None:
        self.scope, self.loop, self.session, self.input = scope, loop, session, input

    async def __aenter__(self) -> None:
        scope = self.scope
        try:
            asyncio.get_running_loop()
            tokens = estimate_early(self.loop, self.session, self.input)
            self.terms = terms = scope.governor.terms(self.loop.model)
            asked = asks(scope, terms, tokens, None)
            if asked is None:
                return
            a = new_admission(scope, terms, *asked)
        except Exception:  # no asyncio loop, a bad input, no price: the request's path answers
            return
        backend = scope.governor.backend
        rides = backend.rides
        self.a, self.sent = a, time.monotonic()
        if rides is not None:  # the call's ADMIT and last FINISH ride its own round trips
            self.rides = rides
            self.ride = rides.open_rides()
            self.rider = rider = rides.ride_admit(a)
        if rides is None or rider is None:
            self.task = asyncio.create_task(backend.admit(a))
        Counts.sent += 1
        self.token = EARLY.set(self)

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        """The call ends: release the admission if no request took it; keep the session's hint."""
        if self.a is None:
            return
        if self.ride is not None:
            self.rides.close_rides(self.ride)  # what still waits is sent or dropped by its owner
        EARLY.reset(self.token)
        last = self.last
        if last is not None:
            est_in, response = last
            _keep_hint(self.session, est_in + (0 if response is None else output_tokens(response)))
        if self.open:
            self.open = False
            await self._release()

    async def take(self, scope: Scope, terms: Terms, tokens: int, nanos: int) -> Admission | None:
        """The early admission for the first request of the call, which asks ``tokens`` and
        ``nanos`` on ``terms`` (:func:`~.governor.asks`): granted, covering that, recent enough;
        else None (released, the request admits as before: a turn of a requests or tokens per
        minute limit is given back before that, so that it can)."""
        if not self.open:
            return None
        answer, rider = self.answer, self.rider
        if answer is None:
            if rider is not None and rider.done():  # its round trip brought the reply back
                answer = self._answered(rider)
            else:  # cancelled here: still open, released when the call ends
                answer = await self._landed()
        self.open = False
        e = self.a
        assert e is not None
        if (
            (answer is GRANTED or _granted(answer))
            and e.tokens >= tokens
            and e.nanos >= nanos
            and ((scope is self.scope and terms is self.terms) or self._same(scope, terms))
            and (not terms.timed or self._recent())
        ):
            Counts.taken += 1
            return e
        await self._release(land_first=True)
        return None

    def _recent(self) -> bool:
        """Whether its timed turn was taken at most :data:`TURN_AHEAD` ago: counted from when the
        ``ADMIT`` was sent (a riding one: when its round trip took it; the server runs it after)."""
        rider = self.rider
        sent = rider.sent if rider is not None and rider.sent is not None else self.sent
        return time.monotonic() - sent <= TURN_AHEAD

    async def _landed(self) -> Admitted | BaseException:
        """The ``ADMIT``'s answer or error, once it landed (a riding one no round trip took is
        sent alone now)."""
        if self.answer is not None:
            return self.answer
        rider, task = self.rider, self.task
        if task is None:  # riding: its ``rides`` is set
            assert rider is not None and self.a is not None
            if rider.done():  # its round trip brought the reply back: no await
                return self._answered(rider)
            try:
                answer: Admitted | BaseException = await self.rides.admitted(self.a, rider)
            except Exception as exc:  # the request's own admission answers
                answer = exc
        else:
            if not task.done():
                await asyncio.wait([task])
            answer = task.result() if not task.cancelled() and task.exception() is None else _LOST
        self.answer = answer
        return answer

    def _answered(self, rider: Any) -> Admitted | BaseException:
        """The answer of the riding ``ADMIT`` whose reply is in (its error: the request's own
        admission answers), kept."""
        try:
            answer: Admitted | BaseException = self.rides.admitted_now(self.a, rider)  # type: ignore[arg-type]
        except Exception as exc:
            answer = exc
        self.answer = answer
        return answer

    def _holds(self, answer: Admitted | BaseException) -> bool:
        """Whether the ``ADMIT`` holds something to give back: granted, or its round trip failed
        (a task's, or the one it rode: whether the server ran it is unknown; a give-back of
        nothing is harmless)."""
        return _granted(answer) or answer is _LOST or (self.rider is not None and self.rider.lost)

    def _same(self, scope: Scope, terms: Terms) -> bool:
        """Whether the request's own admission would ask on the same budgets, limiter, rates and
        tenant (of the same governor) as the early one."""
        e = self.a
        assert e is not None
        return scope.governor is self.scope.governor and (e.limits, e.key, e.rates, e.tenant) == (
            scope.limits,
            terms.key,
            terms.rates,
            scope.tenant,
        )

    def seen(self, scope: Scope, est_in: int, response: ModelResponse | None) -> None:
        """A model call of the call ended: the last one gives the session's hint."""
        if scope is self.scope:
            self.last = (est_in, response)

    async def _release(self, land_first: bool = False) -> None:
        """Give the reservation, the lease and the turn back (:meth:`~.backend.UsageBackend.give_back`:
        the turn only if none was taken since), once the ``ADMIT`` has landed, as a settle; with
        ``land_first`` and a timed turn (requests or tokens per minute), wait for it to land (the
        request's own ``ADMIT`` comes next: before the give-back, it would wait for the turn). A
        riding ``ADMIT`` no round trip took is dropped unsent: nothing to give back."""
        rider, a = self.rider, self.a
        assert a is not None
        if rider is not None and self.rides.drop(rider):
            return
        sent = a if a.key is not None else settle_of(a)
        answer = self.answer
        if sent is None or (answer is not None and not self._holds(answer)):
            return
        Counts.released += 1
        backend = self.scope.governor.backend

        async def release() -> None:
            if self._holds(await self._landed()):
                await backend.give_back(sent)

        started = await backend.settles.beside(self.scope.pending, release)
        timed = (sent.rates.rpm or sent.rates.tpm) and sent.key is not None
        if started is not None and land_first and timed:
            await asyncio.wait([started])  # cancelled here: the give-back goes on


def admit_early(loop: Loop, session: Hashable, input: object) -> Early | Ungoverned:
    """Send the ``ADMIT`` of the block's first model call now, beside the block's first work (a
    call's session lease and load), for ``loop`` answering ``input`` on ``session``; release it at
    the end if no request took it. A no-op without a bound governor (the shared :data:`~.governor.UNGOVERNED`)
    or an asyncio loop, when nothing applies to the call, or when its price is unknown (the
    request's admission says so)."""
    scope = SCOPE.get()
    if scope is None:
        return UNGOVERNED
    return Early(scope, loop, session, input)
