"""Waiting for a turn of a shared rate limit.

The limit of a model is kept in the store under its provider, model id and a fingerprint of its
API key (never the key). A caller asks for a turn (one store operation, :func:`.rules.acquire` or
its Lua twin); when told to wait it sleeps that long and asks again, until granted or until its
``max_wait`` would pass, then raises :class:`~agentscope_teams.errors.RateLimitWaitError`. A 429 that
comes back anyway pauses every process's turns for the ``Retry-After`` the provider sent.
"""

from __future__ import annotations

import random
import time
import uuid

import anyio

from ..errors import RateLimitWaitError
from ..model.base import ChatModel
from ..tracing import metrics as _metrics
from .backend import UsageBackend
from .config import RateLimit
from .rules import Rates

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


class Turn:
    """A granted turn: :meth:`end` it after the call (with the tokens it used)."""

    def __init__(
        self,
        backend: UsageBackend,
        key: str,
        rates: Rates,
        lease: str,
        tokens: int,
        labels: tuple[str, str],
    ) -> None:
        self.backend, self.key, self.rates, self.lease = backend, key, rates, lease
        self.tokens, self.labels = tokens, labels

    async def end(self, used_tokens: int) -> None:
        if self.rates.concurrent or self.rates.tpm:
            delta = used_tokens - self.tokens if used_tokens else 0
            await self.backend.release(self.key, self.rates, self.lease, delta)

    async def hold_off(self, exc: BaseException) -> None:
        """A 429 came back: no process takes a turn for its ``Retry-After``."""
        wait = getattr(exc, "retry_after", None) or DEFAULT_HOLD_OFF
        await self.backend.hold_off(self.key, float(wait) * 1000)
        m = _metrics.METRICS
        if m is not None:
            m.ratelimit_holdoffs.inc(*self.labels)


async def take_turn(
    backend: UsageBackend, model: ChatModel, limit: RateLimit, tenant: str, tokens: int
) -> Turn:
    """Wait for a turn of ``limit`` for ``model`` (see the module docs)."""
    key, rates, lease = limiter_key(model), rates_of(limit), uuid.uuid4().hex
    labels = (str(getattr(model, "provider", "")), model.model_name)
    start = time.monotonic()
    while True:
        wait_ms = await backend.acquire(key, rates, tenant, tokens, lease)
        waited = time.monotonic() - start
        if wait_ms <= 0:
            break
        if waited + wait_ms / 1000 > limit.max_wait:
            m = _metrics.METRICS
            if m is not None:
                m.ratelimit_timeouts.inc(*labels)
            raise RateLimitWaitError(
                f"no turn of the shared rate limit of model {labels[1]!r} ({labels[0]}) within "
                f"{limit.max_wait:g} s (waited {waited:.1f} s, next turn in {wait_ms / 1000:.1f} "
                "s); raise max_wait, lower the load or raise the limit",
                limit=key.rpartition("|")[0],
                waited=waited,
            )
        await anyio.sleep(wait_ms / 1000 + random.uniform(0, min(0.01, wait_ms / 20000)))
    m = _metrics.METRICS
    if m is not None:
        m.ratelimit_wait.observe(waited, *labels)
    return Turn(backend, key, rates, lease, tokens, labels)
