"""What people set: :class:`Budget` (tokens and dollars) and :class:`RateLimit` (requests, tokens
and concurrent calls per minute), with the text forms the command line, model strings and the
environment use (``rpm=60&tpm=90000&concurrent=4``)."""

from __future__ import annotations

import os
from urllib.parse import parse_qsl

from pydantic import ConfigDict, Field, ValidationError

from ..errors import ConfigurationError, first_problem
from ..records import InputRecord

#: Environment variable with the rate limit of every model (query form, ``rpm=60&tpm=90000``).
RATE_LIMIT_ENV = "AGENTSCOPE_TEAMS_RATE_LIMIT"


#: The largest budgets: the ledger counts tokens and nano-dollars in signed 64-bit integers
#: (a SQL ``bigint``, a Redis counter), and 10**18 of either still fits.
MAX_BUDGET_TOKENS = 10**18
MAX_BUDGET_USD = 1e9


class Budget(InputRecord):
    """A spending limit: tokens (input + output) and/or US dollars; None means no limit. An
    unknown field is refused, but kept in a stored one (a review's record: a newer release's).
    A limit is finite and at most :data:`MAX_BUDGET_TOKENS` tokens / :data:`MAX_BUDGET_USD`
    dollars."""

    model_config = ConfigDict(frozen=True)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_BUDGET_TOKENS)
    max_usd: float | None = Field(default=None, gt=0, le=MAX_BUDGET_USD, allow_inf_nan=False)

    @property
    def max_nanos(self) -> int | None:
        """``max_usd`` in nano-dollars, the unit the ledger counts in."""
        return None if self.max_usd is None else round(self.max_usd * 1e9)

    def __bool__(self) -> bool:
        return self.max_tokens is not None or self.max_usd is not None


def budget_of(max_tokens: int | None = None, max_usd: float | None = None) -> Budget | None:
    """A :class:`Budget` of the given limits, or None when both are None."""
    found = Budget(max_tokens=max_tokens, max_usd=max_usd)
    return found if found else None


_ALIASES = {
    "rpm": "requests_per_minute",
    "tpm": "tokens_per_minute",
    "concurrency": "concurrent",
}


class RateLimit(InputRecord):
    """A provider's limits for one model and key, shared by every process of the store.

    ``burst`` turns may be taken at once after a quiet spell; ``max_wait`` seconds is the longest a
    caller waits for a turn before :class:`~agentscope_teams.errors.RateLimitWaitError`;
    ``margin`` keeps the pace that fraction under the limit, so the jitter between a turn and its
    request's arrival does not push two requests closer than the provider allows: the default 5 %
    absorbs 50 ms at 60 requests/min, against a provider that allows no burst (Anthropic documents
    60/min as possibly enforced as 1 a second). An unknown field is refused, but
    kept in a stored one (as :class:`Budget`).
    """

    model_config = ConfigDict(frozen=True)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    concurrent: int | None = Field(default=None, ge=1)
    burst: int = Field(default=1, ge=1)
    max_wait: float = Field(default=300.0, gt=0)
    margin: float = Field(default=0.05, ge=0, lt=0.5)

    @classmethod
    def parse(cls, text: str, *, what: str = "rate limit") -> RateLimit:
        """A limit from ``rpm=60&tpm=90000&concurrent=4`` (``,`` separates too)."""
        pairs = parse_qsl(text.replace(",", "&"), keep_blank_values=True, strict_parsing=False)
        fields = {_ALIASES.get(k.strip(), k.strip()): v.strip() for k, v in pairs}
        if not fields:
            raise ConfigurationError(
                f"empty {what} {text!r}: write it as 'rpm=60&tpm=90000&concurrent=4'"
            )
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            raise ConfigurationError(
                f"invalid {what} {text!r}: {first_problem(exc)}; the keys are rpm, tpm, "
                "concurrent, burst, max_wait and margin"
            ) from None


def split_model_limits(model: str) -> tuple[str, RateLimit | None]:
    """``"openai:gpt-4o?rpm=60"`` -> (``"openai:gpt-4o"``, its limit); no ``?``: no limit."""
    name, sep, query = model.partition("?")
    if not sep:
        return model, None
    return name, RateLimit.parse(query, what=f"rate limit of model {name!r}")


def env_rate_limit() -> RateLimit | None:
    """The limit of :data:`RATE_LIMIT_ENV`, if set."""
    text = os.environ.get(RATE_LIMIT_ENV, "").strip()
    return RateLimit.parse(text, what=f"{RATE_LIMIT_ENV}") if text else None
