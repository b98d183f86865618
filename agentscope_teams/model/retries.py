"""Retries of a model call that a shared rate limit governs: the one home of the retry policy.

An SDK model (``OpenAIChatModel``, ``AnthropicChatModel``) whose call has no :class:`RetryGate`
leaves retries to its SDK (``max_retries``). A governed call (the usage governor's
``model_call`` block, for a model with a shared rate limit, sets :data:`RETRY_GATE`) sends each
attempt with the SDK's retries off and retries here instead (:func:`governed_call`), so that every
request takes a turn of the shared limiter and a 429 pauses every process sharing the key before
anyone sends again:

- retried: HTTP 408, 409, 429 and 5xx, timeouts and failed connections, up to the model's
  ``max_retries`` times (the SDK's own list);
- a 429 is shared first (:meth:`RetryGate.hold_off`) for as long as the provider asked
  (``retry-after-ms``, ``Retry-After``, the rate-limit reset headers: :mod:`.rate_headers`;
  ``Retry-After: 0`` means at once), or, when it did not say, the backoff below; the next attempt
  then waits for its turn, which the store gives after that pause;
- another failure waits the ``Retry-After`` it sent, else an exponential backoff with jitter
  (0.5 s doubling up to 8 s, minus up to a quarter), here only, then takes its turn;
- a provider asking for longer than the limit's ``max_wait`` is not retried: its error is raised.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Protocol, TypeVar

import anyio

from ..errors import ModelConnectionError, ModelTimeoutError, RateLimitError
from .model_errors import ErrorMapper, Failure

T = TypeVar("T")

#: First backoff before a retry (seconds), doubled per retry up to :data:`BACKOFF_MAX`.
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 8.0


class RetryGate(Protocol):
    """What a governed call's retries ask of the shared rate limit (the usage layer gives it)."""

    #: The model whose calls it governs (a call of another model inside the block is not).
    model: object

    @property
    def max_wait(self) -> float:
        """The longest wait (seconds) for a turn: a provider asking for more is not retried."""
        ...

    async def hold_off(self, seconds: float) -> None:
        """A 429: no process sharing the limit takes a turn for ``seconds``."""
        ...

    async def turn(self) -> None:
        """Take a new turn of the limit for the next attempt (waiting for any hold-off)."""
        ...


#: The gate of the governed model call running here (None: the SDK retries).
RETRY_GATE: ContextVar[RetryGate | None] = ContextVar("agentscope_teams_retry_gate", default=None)


def gate_for(model: object) -> RetryGate | None:
    """The gate of ``model``'s call running here, or None (ungoverned: the SDK retries)."""
    gate = RETRY_GATE.get()
    return gate if gate is not None and gate.model is model else None


def retryable(f: Failure) -> bool:
    """Whether a failed attempt is retried: 408, 409, 429, 5xx, a timeout or a failed connection."""
    if f.status is None:
        return f.kind in (ModelConnectionError, ModelTimeoutError)
    return f.status in (408, 409, 429) or f.status >= 500


def backoff(retry: int) -> float:
    """Seconds before retry ``retry`` (0 first) when the provider did not say: exponential, jittered."""
    return min(BACKOFF_FIRST * 2.0**retry, BACKOFF_MAX) * (1 - 0.25 * random.random())


async def governed_call(
    errors: ErrorMapper, send: Callable[[], Awaitable[T]], gate: RetryGate, retries: int
) -> T:
    """``send()`` (one request, the SDK's retries off) until it succeeds or ``retries`` retries
    are spent, as the module docs say; a failure left becomes a ModelError, raised outside the
    ``except`` block so no SDK exception (holding the request) is chained."""
    retry = 0
    while True:
        try:
            return await send()
        except errors.sdk_errors as exc:
            failure = errors.classify(exc)
        wait = failure.retry_after if failure.retry_after is not None else backoff(retry)
        if failure.kind is RateLimitError:
            await gate.hold_off(wait)
        if retry >= retries or not retryable(failure) or wait > gate.max_wait:
            raise errors.error(failure, attempts=retry + 1)
        if failure.kind is not RateLimitError and wait > 0:
            await anyio.sleep(wait)  # not a rate signal: this call waits, the others go on
        await gate.turn()
        retry += 1
