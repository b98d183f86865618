"""What the dashboard reads out of stored sessions: model, token usage and cost, errors.

Nothing here writes. Usage comes from the session's :class:`~agentscope_teams.state.UsageLedger`
(totals that survive compression). Cost is the sum of the ``cost_usd`` the model responses of the
session carry in their message metadata (set when a budget's price book knows the model); a
session none of whose messages carries one has no cost (``None``, shown as "—"), never 0.

A team's sessions: each member's (agent named after the member, session ``Member.session_id``)
and the lead's (its newest session whose
:class:`~agentscope_teams.teams.lead.state.TeamLeadState` names the team).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel

from ..message import ToolResultBlock, ToolUseBlock
from ..sessions import SessionRecord
from ..subagents.runs import RunRecord
from ..teams import MemberStatus, Task, TaskStatus, Team
from ..teams.lead.state import TeamLeadState

#: How much of an error's text an entry keeps.
DETAIL_CHARS = 500


class Usage(BaseModel):
    """Reported tokens and (when known) cost in US dollars."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cost_usd: float | None = None

    def plus(self, other: Usage) -> Usage:
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            requests=self.requests + other.requests,
            cost_usd=cost,
        )


class MemberUsage(Usage):
    """One participant of a team (the lead or a member) with its session, if it has one yet."""

    name: str
    role: str
    status: str
    agent_id: str | None = None
    session_id: str | None = None
    model: str | None = None


class TeamUsage(BaseModel):
    team_id: str
    participants: list[MemberUsage]
    total: Usage


class ErrorEntry(BaseModel):
    """Something that went wrong, as the store recorded it.

    ``kind``: ``task_failed`` (a task's error), ``lease_expired`` (a member stopped renewing a
    task's lease: it crashed or hung), ``member_failed`` (a member whose status is failed),
    ``run_failed`` (a subagent run of a team session that failed or was lost), ``tool_error`` (a
    tool result marked as an error in a session: a refused call, a hook block, a sandbox denial, a
    budget stop or a tool that raised; the store does not record which).
    """

    kind: str
    who: str
    what: str
    detail: str
    at: datetime | None = None
    task_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None


def model_of(record: SessionRecord) -> str | None:
    """The session's model: ``config.model``, else the chat model AgentScope's config names."""
    chat = record.config.chat_model_config
    return record.config.model or (chat.model if chat is not None else None)


def usage_of(record: SessionRecord) -> Usage:
    ledger = record.state.usage
    costs = [
        m.metadata["cost_usd"]
        for m in record.state.context
        if isinstance(m.metadata.get("cost_usd"), int | float)
    ]
    return Usage(
        input_tokens=ledger.input_tokens,
        output_tokens=ledger.output_tokens,
        requests=ledger.requests,
        cost_usd=float(sum(costs)) if costs else None,
    )


def team_sessions(team: Team, records: Iterable[SessionRecord]) -> dict[str, SessionRecord]:
    """Participant name -> its session, among ``records`` (the owner's sessions)."""
    by_id = {m.session_id: m.name for m in team.members}
    found: dict[str, SessionRecord] = {}
    for r in records:
        if r.session_id in by_id and r.agent_id != team.lead:
            found[by_id[r.session_id]] = r
        elif _leads(r, team) and (
            team.lead not in found or r.updated_at > found[team.lead].updated_at
        ):
            found[team.lead] = r
    return found


def _leads(record: SessionRecord, team: Team) -> bool:
    """Whether ``record`` is a session of the lead whose current team is ``team``."""
    return record.agent_id == team.lead and TeamLeadState.peek(record.state).team_id == team.id


def team_usage(team: Team, sessions: dict[str, SessionRecord]) -> TeamUsage:
    rows: list[MemberUsage] = []
    statuses = {team.lead: team.status.value, **{m.name: m.status.value for m in team.members}}
    for name in team.participants():
        record = sessions.get(name)
        usage = usage_of(record) if record is not None else Usage()
        rows.append(
            MemberUsage(
                name=name,
                role="lead" if name == team.lead else "member",
                status=statuses[name],
                agent_id=record.agent_id if record is not None else None,
                session_id=record.session_id if record is not None else None,
                model=model_of(record) if record is not None else None,
                **usage.model_dump(),
            )
        )
    total = Usage()
    for row in rows:
        total = total.plus(row)
    return TeamUsage(team_id=team.id, participants=rows, total=Usage(**total.model_dump()))


def team_errors(
    team: Team, tasks: Iterable[Task], sessions: dict[str, SessionRecord]
) -> list[ErrorEntry]:
    """Failed tasks, failed members and error tool results of the team's sessions, newest first."""
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


def tool_errors(who: str, record: SessionRecord) -> list[ErrorEntry]:
    """The error tool results of one session, with the call's tool name."""
    out = []
    for msg in record.state.context:
        for block in msg.blocks:
            if isinstance(block, ToolResultBlock) and block.is_error:
                out.append(
                    ErrorEntry(
                        kind="tool_error",
                        who=who,
                        what=block.name or _tool_name(record, block.tool_use_id),
                        detail=block.output[:DETAIL_CHARS],
                        at=msg.created_at,
                        agent_id=record.agent_id,
                        session_id=record.session_id,
                    )
                )
    return out


def _tool_name(record: SessionRecord, call_id: str) -> str:
    for msg in record.state.context:
        for block in msg.blocks:
            if isinstance(block, ToolUseBlock) and block.id == call_id:
                return block.name
    return "tool"
