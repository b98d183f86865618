"""What the dashboard reads out of stored sessions: model, token usage and cost (errors: see
:mod:`.error_reads`).

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

from pydantic import BaseModel

from ..sessions import SessionRecord
from ..teams import Team
from ..teams.lead.state import TeamLeadState
from .error_reads import ErrorEntry as ErrorEntry  # re-exported: the read API's models
from .error_reads import run_error as run_error
from .error_reads import team_errors as team_errors


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
