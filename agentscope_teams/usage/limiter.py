"""Admitting a model call: its budgets' reservation and its turn of a shared rate limit, together.

The limit of a model is kept in the store under its provider, model id and a fingerprint of its
API key (never the key). :func:`admit` asks the store once per attempt (:func:`.rules.admit` or its
Lua twin) for both the reservation and the turn; told to wait for a turn it sleeps that long and
asks again, until admitted or until its ``max_wait`` would pass, then raises
:class:`~agentscope_teams.errors.RateLimitWaitError`; a budget whose rest is held by calls in flight
is asked again with a backoff up to the governor's ``budget_wait``; before that wait (or a wait for a
turn that a lease or the token count may hold), the settles the caller's earlier calls still run are
waited for and the store asked again at once: they may be what holds it. A 429 that comes back anyway
pauses every process's turns for the ``Retry-After`` the provider sent (:func:`hold_off`). The
retries of a call of an SDK model go through the limiter too (:class:`Retries`, the gate of
:mod:`..model.retries`): each attempt takes a turn, after any pause a 429 shared.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Awaitable, Callable

import anyio

from ..errors import RateLimitWaitError
from ..model.base import ChatModel
from ..tracing import metrics as _metrics
from .backend import UsageBackend
from .config import RateLimit
from .rules import Admission, Rates, Refusal

#: Pause after a 429 that did not say how long to wait (seconds).
DEFAULT_HOLD_OFF = 1.0


def limiter_key(model: ChatModel) -> str:
    """``provider|model|key fingerprint`` of ``model``."""
    provider = str(getattr(model, "provider", ""))
    fingerprint = str(getattr(model, "key_fingerprint", ""))
    return f"{provider}|{model.model_name}|{fingerprint}"


def rates_of(limit: RateLimit) -> Rates:
    """The limits the store applies: ``margin`` under the configured ones."""
    slow = 1.0 - limit.margin
    rpm = limit.requests_per_minute * slow if limit.requests_per_minute else None
    tpm = limit.tokens_per_minute * slow if limit.tokens_per_minute else None
    return Rates(rpm=rpm, tpm=tpm, concurrent=limit.concurrent, burst=limit.burst)


def labels_of(model: ChatModel) -> tuple[str, str]:
    """The metric labels of ``model``'s limiter: provider and model."""
    return str(getattr(model, "provider", "")), model.model_name


async def admit(
    backend: UsageBackend,
    a: Admission,
    limit: RateLimit | None,
    budget_wait: float,
    labels: tuple[str, str],
    settled: Callable[[], Awaitable[bool]] | None = None,
) -> Refusal | None:
    """Reserve and take a turn (one store operation per attempt); the refusal of a budget that is
    spent (or still held by calls in flight after ``budget_wait`` s), else None: admitted.
    ``settled()`` waits for the caller's own settles still running (True if there were any)."""
    start = time.monotonic()
    pause = 0.05
    while True:
        answer = await backend.admit(a)
        waited = time.monotonic() - start
        refusal = answer.refusal
        spent = refusal is not None and refusal.settled >= refusal.limit
        held = (refusal is not None and not spent) or (answer.wait_ms > 0 and ends_lease(a))
        if held and settled is not None and await settled():
            continue  # what held it may have been our own earlier call, still settling
        if refusal is not None:
            if spent or waited + pause > budget_wait:
                return refusal
            # what is left is held by calls in flight: their settling may give some back
            await anyio.sleep(pause * random.uniform(0.8, 1.2))
            pause = min(pause * 2, 1.0)
            continue
        wait_ms = answer.wait_ms
        if wait_ms <= 0:
            break
        if limit is not None and waited + wait_ms / 1000 > limit.max_wait:
            raise _waited_too_long(a, limit, labels, waited, wait_ms)
        await anyio.sleep(wait_ms / 1000 + random.uniform(0, min(0.01, wait_ms / 20000)))
    count_wait(a, labels, waited)
    return None


def count_wait(a: Admission, labels: tuple[str, str], waited: float) -> None:
    """Observe how long admitted ``a`` waited for its turn (when it took one)."""
    m = _metrics.METRICS
    if m is not None and a.key is not None:
        m.ratelimit_wait.observe(waited, *labels)


def ends_lease(a: Admission) -> bool:
    """Whether the settle of ``a`` gives its limiter something back (a lease, the token count)."""
    return a.key is not None and bool(a.rates.concurrent or a.rates.tpm)


def settle_of(a: Admission) -> Admission | None:
    """What the settle (or release) of ``a`` sends: ``a`` without its limiter when it has no lease
    to end (:func:`ends_lease`), None when there is nothing to settle (no budget, no lease: a
    requests/min turn only)."""
    if a.key is None:
        return a if a.limits else None
    if ends_lease(a):
        return a
    if not a.limits:
        return None
    # built, not a._replace(key=None): a fraction of the cost, on every such call
    return Admission(a.limits, a.rid, a.tokens, a.nanos, None, a.rates, a.tenant)


def _waited_too_long(
    a: Admission, limit: RateLimit, labels: tuple[str, str], waited: float, wait_ms: float
) -> RateLimitWaitError:
    m = _metrics.METRICS
    if m is not None:
        m.ratelimit_timeouts.inc(*labels)
    return RateLimitWaitError(
        f"no turn of the shared rate limit of model {labels[1]!r} ({labels[0]}) within "
        f"{limit.max_wait:g} s (waited {waited:.1f} s, next turn in {wait_ms / 1000:.1f} "
        "s); raise max_wait, lower the load or raise the limit",
        limit=(a.key or "").rpartition("|")[0],
        waited=waited,
    )


async def hold_off(
    backend: UsageBackend, a: Admission, labels: tuple[str, str], exc: BaseException
) -> None:
    """A 429 came back: no process takes a turn of ``a``'s limiter for its ``Retry-After``
    (``0``: none; :data:`DEFAULT_HOLD_OFF` when it did not say)."""
    wait = getattr(exc, "retry_after", None)
    await pause(backend, a, labels, DEFAULT_HOLD_OFF if wait is None else float(wait))


async def pause(
    backend: UsageBackend, a: Admission, labels: tuple[str, str], seconds: float
) -> None:
    """No process takes a turn of ``a``'s limiter for ``seconds`` (a 429 asked for them)."""
    if a.key is None or seconds <= 0:
        return
    await backend.hold_off(a.key, seconds * 1000)
    m = _metrics.METRICS
    if m is not None:
        m.ratelimit_holdoffs.inc(*labels)


class Retries:
    """The retry gate of one governed call of ``model`` (:class:`..model.retries.RetryGate`): a 429
    pauses the limiter for every process (:func:`pause`), and each retry takes a new turn as
    ``a``'s tenant, waiting as :func:`admit` does (for a pause too), up to the limit's
    ``max_wait``. A retry's turn reserves nothing and takes no lease: the call holds ``a``'s
    (its tokens counted once on the token clock, corrected when it settles)."""

    __slots__ = ("a", "backend", "held", "labels", "limit", "model", "retries")

    def __init__(
        self,
        model: object,
        backend: UsageBackend,
        a: Admission,
        limit: RateLimit,
        labels: tuple[str, str],
    ) -> None:
        self.model, self.backend, self.a, self.limit, self.labels = model, backend, a, limit, labels
        #: Whether a 429 was shared (the call's end need not pause the limiter again).
        self.held = False
        self.retries = 0

    @property
    def max_wait(self) -> float:
        return self.limit.max_wait

    async def hold_off(self, seconds: float) -> None:
        self.held = True
        try:
            await pause(self.backend, self.a, self.labels, seconds)
        except Exception as exc:  # the 429 (or its retry) is what the caller must see
            logging.getLogger(__name__).warning("could not pause the shared rate limit: %s", exc)

    async def turn(self) -> None:
        a = self.a
        self.retries += 1
        rates = dataclasses.replace(a.rates, concurrent=None)
        again = Admission((), f"{a.rid}.{self.retries}", 0, 0, a.key, rates, a.tenant)
        await admit(self.backend, again, self.limit, 0.0, self.labels)
