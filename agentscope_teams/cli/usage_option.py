"""``--max-tokens``, ``--max-budget-usd`` and ``--rate-limit`` of every command that runs model
calls (``run``, ``worker``, ``review``, ``serve --a2a/--mcp``, ``mcp-serve``), and a rate limit
written on ``--model`` (``openai:gpt-4o?rpm=60&tpm=90000``): one home for the options, their
reading (:func:`usage_options`) and the governor they make (:meth:`UsageOptions.governor`)."""

from __future__ import annotations

import argparse
import textwrap
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from pydantic import ValidationError

from ..errors import ConfigurationError
from ..usage import Budget, RateLimit, UsageGovernor, budget_of, split_model_limits

#: What the budget of a published lead covers (``serve --a2a/--mcp``, ``mcp-serve``), and how a
#: spent one shows.
CALLER_SCOPE = "each caller's session of the published lead"
CALLER_NOTE = (
    "A session is an MCP call's session_id (else its caller's default one) or an A2A context; "
    "its subagents' and teams' calls count on it too. A call on a spent one fails (an MCP tool "
    "error, a failed A2A task) naming the budget and by how much; other sessions go on."
)


def add_usage_options(parser: argparse.ArgumentParser, scope: str, note: str | None = None) -> None:
    """Add the budget and rate-limit options; ``scope`` says what the budget applies to, ``note``
    (the group's description) how it is counted and what happens when it is spent."""
    text = textwrap.fill(note, width=88) if note else None  # as add_command fills its text
    group = parser.add_argument_group("budgets and rate limits", text)
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


@dataclass(frozen=True)
class UsageOptions:
    """What the options set: the budget (None: none) and the rate limit (None: the one of
    ``AGENTSCOPE_TEAMS_RATE_LIMIT``, if set, which every governor reads)."""

    budget: Budget | None = None
    rate_limit: RateLimit | None = None

    def governor(self, store: Any, kind: str) -> UsageGovernor | None:
        """A governor on ``store``: the budget per ``kind`` (``session``: each session's; ``team``:
        each team's that sets none) and the rate limit; None when neither is set."""
        if self.budget is None and self.rate_limit is None:
            return None
        budgets = {kind: self.budget} if self.budget else {}
        return UsageGovernor(store, budgets=budgets, rate_limit=self.rate_limit)

    def worker_args(self) -> list[str]:
        """The ``worker`` options giving the processes a command starts the same rate limit (a
        budget reaches them with the team: :class:`~agentscope_teams.teams.directory.TeamRuntimeRecord`)."""
        return (
            [] if self.rate_limit is None else ["--rate-limit", rate_limit_query(self.rate_limit)]
        )


def usage_options(args: argparse.Namespace) -> UsageOptions:
    """The options of ``args``; takes a ``?query`` rate limit off ``args.model`` (the limit of
    ``--rate-limit`` wins over it). Invalid values are a ``ConfigurationError`` naming them."""
    limit = None
    if getattr(args, "model", None):
        args.model, limit = split_model_limits(args.model)
    if args.rate_limit:
        limit = RateLimit.parse(args.rate_limit, what="--rate-limit")
    try:
        budget = budget_of(args.max_tokens, args.max_budget_usd)
    except ValidationError as exc:
        problems = "; ".join(map(_budget_problem, exc.errors()))
        raise ConfigurationError(f"{problems}: change it or leave it out") from None
    return UsageOptions(budget, limit)


#: The option of each :class:`~agentscope_teams.usage.Budget` field.
_OPTIONS = {"max_tokens": "--max-tokens", "max_usd": "--max-budget-usd"}


def _budget_problem(error: Any) -> str:
    """``invalid budget --max-tokens 0, must be greater than or equal to 1`` for one of a budget's
    validation errors (the rule is the :class:`~agentscope_teams.usage.Budget` field's)."""
    field = str(error["loc"][0]) if error.get("loc") else ""
    rule = error["msg"].removeprefix("Input should be ")
    return f"invalid budget {_OPTIONS.get(field, field)} {error['input']}, must be {rule}"


def rate_limit_query(limit: RateLimit) -> str:
    """``limit`` in the form ``--rate-limit`` reads (``requests_per_minute=60&concurrent=8``)."""
    return urlencode(limit.model_dump(exclude_defaults=True))
