"""Why a session's calls failed, kept with the session: the dashboard's errors panel reads it.

A call that raises (the model failed, a budget stopped it, anything else) is saved with its
partial state; :func:`record_failure` adds a :class:`CallFailure` to the session's
:class:`SessionFailures` (``AgentState.middle_context["failures"]``, the newest
:data:`KEEP` only) in that same save. Refusals that do not end the call (a hook block, a
permission denial, a sandbox denial) are tool results instead; their kind is in the result's
``data["error_kind"]`` (:func:`refusal_data`). A PostToolUse (or PostToolUseFailure) hook that
blocks after the tool ran leaves an :class:`AfterToolBlock` in the result's
``data["hook_block_after_tool"]``. The session is the one home of all of them: nothing else
records them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from ..errors import BudgetExceededError, ModelError
from ..state import AgentState, ExtensionState

#: How many failures a session keeps (the newest).
KEEP = 20
#: How much of a failure's message is kept.
DETAIL_CHARS = 500

FailureKind = Literal["model_error", "budget_stop", "crash"]
RefusalKind = Literal["hook_block", "permission_denied", "sandbox_denial"]


class BudgetOverrun(BaseModel):
    """Which budget stopped a call and by how much (``unit``: ``tokens`` or ``usd``)."""

    budget: str
    unit: str
    limit: float
    used: float
    over: float

    @classmethod
    def of(cls, exc: BudgetExceededError) -> BudgetOverrun:
        """The overrun ``exc`` reports."""
        return cls(budget=exc.budget, unit=exc.unit, limit=exc.limit, used=exc.used, over=exc.over)

    def summary(self) -> str:
        """How a person reads it (the lead's ``[budget]`` note and the dashboard's entry):
        ``team:crew: 1,250 tokens used of 1,000 tokens, over by 250 tokens``."""

        def amount(value: float) -> str:
            return f"${value:.4f}" if self.unit == "usd" else f"{value:,.0f} tokens"

        return (
            f"{self.budget}: {amount(self.used)} used of {amount(self.limit)}, "
            f"over by {amount(self.over)}"
        )


class CallFailure(BaseModel):
    """One call that ended with an error."""

    kind: FailureKind
    error: str  # the exception's class name
    detail: str
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    budget: BudgetOverrun | None = None


class SessionFailures(ExtensionState):
    """The failed calls of one session, oldest first."""

    KEY: ClassVar[str] = "failures"
    failures: list[CallFailure] = Field(default_factory=list)


def failure_of(exc: BaseException) -> CallFailure | None:
    """What ``exc`` says about a failed call; None for a cancellation or an interrupt. The one
    maker of a failure: a budget stop's session record and the lead's note are both this value."""
    if not isinstance(exc, Exception):
        return None
    detail = str(exc)[:DETAIL_CHARS] or type(exc).__name__
    if isinstance(exc, BudgetExceededError):
        return CallFailure(
            kind="budget_stop",
            error=type(exc).__name__,
            detail=detail,
            budget=BudgetOverrun.of(exc),
        )
    kind: FailureKind = "model_error" if isinstance(exc, ModelError) else "crash"
    return CallFailure(kind=kind, error=type(exc).__name__, detail=detail)


def record_failure(state: AgentState, exc: BaseException) -> None:
    """Add ``exc`` to ``state``'s failures (saved with it); nothing for a cancellation."""
    failure = failure_of(exc)
    if failure is not None:
        kept = SessionFailures.of(state)
        kept.failures = [*kept.failures, failure][-KEEP:]


def refusal_data(kind: RefusalKind) -> dict[str, str]:
    """The ``data`` of a tool result refused before the tool ran (its kind, for the dashboard)."""
    return {"error_kind": kind}


class AfterToolBlock(BaseModel):
    """A PostToolUse / PostToolUseFailure hook blocked after the tool ran: the ``event``, the
    ``hooks`` that blocked (their labels) and their ``reason`` (the model reads it as a note)."""

    KEY: ClassVar[str] = "hook_block_after_tool"
    event: str
    hooks: list[str]
    reason: str

    def into(self, data: dict[str, Any] | None) -> dict[str, Any]:
        """``data`` (a result's) with this block added under :attr:`KEY`."""
        return {**(data or {}), self.KEY: self.model_dump(mode="json")}
