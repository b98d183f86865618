"""The numbers of a finished review, read from the task board: the findings data the members
completed their tasks with (:func:`~agentscope_teams.review.report.board_findings`), never the text of
a result or of the report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..agent.failures import BudgetOverrun
from ..context import RuntimeContext
from ..review.report import board_findings
from ..teams import Task, TaskStatus
from .review_view import ReviewSummary

if TYPE_CHECKING:
    from .review_run import ReviewConfig


def summarize(
    cfg: ReviewConfig,
    tasks: Sequence[Task],
    seconds: float,
    *,
    team_id: str | None,
    session: RuntimeContext,
    budget_stop: BudgetOverrun | None = None,
) -> ReviewSummary:
    """The numbers of the run, from the findings data on the board: each problem counted once
    (as the report lists it), the files the members say they reviewed."""
    board = board_findings(tasks)
    members = sorted({m for t in tasks if (m := t.owner or t.assignee)})
    unfinished = [
        f"{t.id} ({t.status.value})" for t in tasks if t.status is not TaskStatus.COMPLETED
    ]
    return ReviewSummary(
        target=cfg.target,
        model=cfg.model.model_name,
        offline=cfg.offline,
        output=cfg.output.resolve(),
        seconds=seconds,
        files=len(board.files),
        tasks=len(tasks),
        members=members,
        counts=board.counts(),
        unfinished=unfinished,
        team_id=team_id,
        session_id=session.session_id,
        budget_stop=budget_stop,
    )
