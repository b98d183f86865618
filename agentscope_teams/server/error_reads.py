"""What went wrong in a team, as the dashboard's errors panel lists it, each with its kind.

Everything is read from what the store already holds; nothing here writes. The homes:

- the task board: ``task_failed`` (a task's error) and ``lease_expired`` (its owner stopped
  renewing the lease: the member crashed or hung);
- the team record: ``member_failed`` (a member whose status is failed);
- each participant's session (:mod:`agentscope_teams.agent.failures`): a call that raised is
  ``model_error`` (the model failed), ``budget_stop`` (a budget is spent: which one, its unit,
  limit, use and overrun) or ``member_crash`` (anything else; ``call_failed`` for the lead); a tool
  call refused before it ran is ``hook_block`` or ``permission_denied``; a shell command refused
  (by the permission engine, or by the kernel in a contained sandbox) is ``sandbox_denial``, read
  from the one :class:`~agentscope_teams.sandbox.denials.SandboxDenial` its result keeps (the
  event the metric counted); any other error tool result is ``tool_error``; a PostToolUse hook
  that blocked after the tool ran is ``hook_block_after_tool`` (an entry of its own, naming the
  hook and the tool);
- the subagent runs of those sessions: ``run_failed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel

from ..agent.failures import AfterToolBlock, CallFailure, SessionFailures
from ..message import ToolResultBlock, ToolUseBlock
from ..sandbox.denials import SandboxDenial
from ..sessions import SessionRecord
from ..subagents.runs import RunRecord
from ..teams import MemberStatus, Task, TaskStatus, Team

#: How much of an error's text an entry keeps.
DETAIL_CHARS = 500
#: The tool results whose kind is recorded in ``data["error_kind"]``.
REFUSALS = frozenset({"hook_block", "permission_denied"})


class ErrorEntry(BaseModel):
    """Something that went wrong, as the store recorded it; ``kind`` is one of the module's.

    A ``budget_stop`` also names the ``budget``, its ``unit`` (``tokens`` or ``usd``), ``limit``,
    ``used``, how far ``over`` it went and its ``summary`` (the text the lead's ``[budget]`` note
    has: ``agent.failures.BudgetOverrun.summary``); a ``sandbox_denial`` its ``reason`` (``permission``,
    ``filesystem``, ``network``, ``operation``) and ``cause``; a ``hook_block_after_tool`` the
    ``hook`` that blocked (``what`` is the tool).
    """

    kind: str
    who: str
    what: str
    detail: str
    at: datetime | None = None
    task_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    budget: str | None = None
    unit: str | None = None
    limit: float | None = None
    used: float | None = None
    over: float | None = None
    summary: str | None = None
    reason: str | None = None
    cause: str | None = None
    hook: str | None = None


def team_errors(
    team: Team, tasks: Iterable[Task], sessions: dict[str, SessionRecord]
) -> list[ErrorEntry]:
    """Failed tasks and members, failed calls and refused or failed tool calls of the team's
    sessions, newest first."""
    out = [
        ErrorEntry(
            kind="task_failed",
            who=t.owner or "",
            what=t.title,
            detail=(t.error or "")[:DETAIL_CHARS],
            at=t.updated_at,
            task_id=t.id,
        )
        for t in tasks
        if t.status is TaskStatus.FAILED
    ]
    out += [e for t in tasks for e in lapsed_leases(t)]
    out += [
        ErrorEntry(kind="member_failed", who=m.name, what=m.spec, detail="status failed")
        for m in team.members
        if m.status is MemberStatus.FAILED
    ]
    for name, record in sessions.items():
        out += call_failures(name, record, lead=name == team.lead)
        out += tool_errors(name, record)
    return sorted(out, key=lambda e: e.at.timestamp() if e.at else 0.0, reverse=True)


def lapsed_leases(task: Task) -> list[ErrorEntry]:
    """Each time the owner of ``task`` stopped renewing its lease (named by the claim before)."""
    out, owner = [], ""
    for event in task.history:
        if event.action == "claimed":
            owner = event.actor
        elif event.action == "lease_expired":
            out.append(
                ErrorEntry(
                    kind="lease_expired",
                    who=owner,
                    what=task.title,
                    detail=event.detail[:DETAIL_CHARS],
                    at=event.at,
                    task_id=task.id,
                )
            )
    return out


def run_error(who: str, run: RunRecord) -> ErrorEntry:
    """A failed or lost subagent run started by ``who``'s session."""
    return ErrorEntry(
        kind="run_failed",
        who=who,
        what=f"subagent {run.spec} ({run.status.value})",
        detail=(run.error or "")[:DETAIL_CHARS],
        at=run.ended_at or run.created_at,
        session_id=run.child_session,
        agent_id=run.spec,
    )


def call_failures(who: str, record: SessionRecord, *, lead: bool) -> list[ErrorEntry]:
    """The calls of ``who``'s session that raised (model errors, budget stops, crashes)."""
    return [
        _failure_entry(who, record, f, lead) for f in SessionFailures.peek(record.state).failures
    ]


def _failure_entry(who: str, record: SessionRecord, f: CallFailure, lead: bool) -> ErrorEntry:
    kind: str = f.kind
    if kind == "crash":
        kind = "call_failed" if lead else "member_crash"
    where = {"agent_id": record.agent_id, "session_id": record.session_id}
    if f.budget is None:
        return ErrorEntry(kind=kind, who=who, what=f.error, detail=f.detail, at=f.at, **where)
    b = f.budget
    return ErrorEntry(
        kind=kind,
        who=who,
        what=f"budget {b.budget}",
        summary=b.summary(),
        detail=f.detail,
        at=f.at,
        budget=b.budget,
        unit=b.unit,
        limit=b.limit,
        used=b.used,
        over=b.over,
        **where,
    )


def tool_errors(who: str, record: SessionRecord) -> list[ErrorEntry]:
    """The refused, denied and failed tool calls of one session, with the call's tool name, and
    the hooks that blocked after a tool ran."""
    out: list[ErrorEntry] = []
    where = {"agent_id": record.agent_id, "session_id": record.session_id}
    for msg in record.state.context:
        for block in msg.blocks:
            if not isinstance(block, ToolResultBlock):
                continue
            tool = block.name or _tool_name(record, block.tool_use_id)
            entry = _result_error(who, tool, block)
            if entry is not None:
                out.append(entry.model_copy(update={"at": msg.created_at, **where}))
            after = _after_tool_block(who, tool, block)
            if after is not None:
                out.append(after.model_copy(update={"at": msg.created_at, **where}))
    return out


def _result_error(who: str, tool: str, block: ToolResultBlock) -> ErrorEntry | None:
    """The error a tool result records, if any (a sandbox denial is its one recorded event)."""
    data = block.data or {}
    detail = block.output[:DETAIL_CHARS]
    if data.get("sandbox_denial"):
        denial = SandboxDenial.model_validate(data["sandbox_denial"])
        return ErrorEntry(
            kind="sandbox_denial", who=who, what=tool, detail=detail, reason=denial.reason,
            cause=denial.cause,
        )  # fmt: skip
    if not block.is_error:
        return None
    kind = data.get("error_kind")
    kind = kind if isinstance(kind, str) and kind in REFUSALS else "tool_error"
    return ErrorEntry(kind=kind, who=who, what=tool, detail=detail)


def _after_tool_block(who: str, tool: str, block: ToolResultBlock) -> ErrorEntry | None:
    """A PostToolUse hook's block of a tool that already ran, with the hook that blocked."""
    found = (block.data or {}).get(AfterToolBlock.KEY)
    if not isinstance(found, dict):
        return None
    after = AfterToolBlock.model_validate(found)
    return ErrorEntry(
        kind="hook_block_after_tool",
        who=who,
        what=tool,
        detail=after.reason[:DETAIL_CHARS],
        hook="; ".join(after.hooks)[:DETAIL_CHARS] or after.event,
    )


def _tool_name(record: SessionRecord, call_id: str) -> str:
    for msg in record.state.context:
        for block in msg.blocks:
            if isinstance(block, ToolUseBlock) and block.id == call_id:
                return block.name
    return "tool"
