"""``--max-tokens``, ``--max-budget-usd`` and ``--rate-limit`` of ``run`` and ``worker``, and a
rate limit written on ``--model`` (``openai:gpt-4o?rpm=60&tpm=90000``)."""

from __future__ import annotations

import argparse
from typing import Any

from ..usage import Budget, RateLimit, UsageGovernor, budget_of, split_model_limits


def add_usage_options(parser: argparse.ArgumentParser, scope: str) -> None:
    """Add the budget and rate-limit options; ``scope`` says what the budget applies to."""
    group = parser.add_argument_group("budgets and rate limits")
    group.add_argument(
        "--max-tokens", type=int, default=None, metavar="N", help=f"token budget of {scope}"
    )
    group.add_argument(
        "--max-budget-usd",
        type=float,
        default=None,
        metavar="USD",
        help=f"dollar budget of {scope}",
    )
    group.add_argument(
        "--rate-limit",
        default=None,
        metavar="QUERY",
        help="the model's limit shared by every process of the store, e.g. "
        "'rpm=60&tpm=90000&concurrent=8' (default: a '?query' on --model, else "
        "AGENTSCOPE_TEAMS_RATE_LIMIT)",
    )


def split_model_option(args: argparse.Namespace) -> RateLimit | None:
    """Take a ``?query`` rate limit off ``args.model``; the limit of ``--rate-limit`` wins."""
    limit = None
    if getattr(args, "model", None):
        args.model, limit = split_model_limits(args.model)
    if args.rate_limit:
        limit = RateLimit.parse(args.rate_limit, what="--rate-limit")
    return limit


def usage_governor(args: argparse.Namespace, store: Any, kind: str) -> UsageGovernor | None:
    """The governor of the options: the budget per ``kind`` (``session``, ``team``), the limit."""
    limit = split_model_option(args)
    budget: Budget | None = budget_of(args.max_tokens, args.max_budget_usd)
    if budget is None and limit is None:
        return None
    return UsageGovernor(store, budgets={kind: budget} if budget else {}, rate_limit=limit)
