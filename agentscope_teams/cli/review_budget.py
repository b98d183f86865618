"""A review stopped by its budget (``review --max-tokens`` / ``--max-budget-usd``).

The lead's calls and every member's (in this process and in ``--workers`` processes) draw on one
budget: the lead session's (``session://<lead session>``), which members in other processes draw on
through the team's directory record (:mod:`agentscope_teams.teams.directory`). When it is spent
the members stop with :class:`~agentscope_teams.errors.BudgetExceededError` (the lead is told) and
so does the lead's next call: the review then writes the report of the findings completed so far,
says which budget stopped it and by how much (:class:`~agentscope_teams.agent.failures.BudgetOverrun`,
the wording of the dashboard and of the lead's ``[budget]`` note), and exits 1 with an ``error:``
line (:func:`stopped_error`). The team is left as an interrupted review's is, so ``--resume`` with a
larger budget continues it on the same ledger.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from ..agent.failures import BudgetOverrun
from ..errors import BudgetExceededError, CommandError
from .exits import error_leaves

if TYPE_CHECKING:
    from .review_view import ReviewSummary


def budget_stop_of(exc: BaseException) -> BudgetOverrun | None:
    """The overrun when ``exc`` (or every error of an exception group) is a spent budget."""
    leaves = error_leaves(exc)
    if not all(isinstance(e, BudgetExceededError) for e in leaves):
        return None
    first = leaves[0]
    assert isinstance(first, BudgetExceededError)
    return BudgetOverrun.of(first)


def stop_line(overrun: BudgetOverrun) -> str:
    """``stopped by budget session://review-1: 20,412 tokens used of 20,000 tokens, over by 412
    tokens`` (the summary's, the report's and the error's wording)."""
    return f"stopped by budget {overrun.summary()}"


def stopped_error(summary: ReviewSummary) -> CommandError:
    """The error a budget-stopped review exits with (1), once its report and summary are out."""
    overrun = summary.budget_stop
    assert overrun is not None
    option = "--max-budget-usd" if overrun.unit == "usd" else "--max-tokens"
    again = f"agentscope-teams review --resume {shlex.quote(summary.session_id)} {option} N"
    return CommandError(
        f"the review of {summary.target} {stop_line(overrun)}; the report of what was found so "
        f"far is in {summary.output}; to finish it, raise the budget: {again} (with the same "
        "--store)"
    )
