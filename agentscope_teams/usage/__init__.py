"""Budgets and rate limits shared by every process of a store.

* :class:`Budget` — tokens and/or dollars for an org, user, session, team, member or subagent run;
  reserved before each model call and settled after it, in one store operation each, so a budget is
  overshot by at most one call (:mod:`.rules`, :mod:`.backend`).
* :class:`RateLimit` — requests, tokens and concurrent calls per minute per provider, model and API
  key, with fair shares between tenants (teams, users) (:mod:`.limiter`).
* :class:`UsageGovernor` binds both to model calls (:mod:`.governor`); prices come from
  :class:`PriceBook` (overrides, then ``genai-prices``). A call's settle runs beside the caller's
  next work (:mod:`.settles`): :func:`settled` waits for a bound block's, :func:`flush` for a
  store's.

How to set them and the design: docs/operations.md, "Budgets and rate limits".
"""

from __future__ import annotations

from .config import RATE_LIMIT_ENV, Budget, RateLimit, budget_of, split_model_limits
from .governor import (
    UsageGovernor,
    add_budget,
    current_scope,
    flush,
    model_call,
    settled,
    spent_budget,
    tenant,
)
from .prices import Price, PriceBook

__all__ = [
    "RATE_LIMIT_ENV",
    "Budget",
    "Price",
    "PriceBook",
    "RateLimit",
    "UsageGovernor",
    "add_budget",
    "budget_of",
    "current_scope",
    "flush",
    "model_call",
    "settled",
    "spent_budget",
    "split_model_limits",
    "tenant",
]
