"""Read-only routes over the operator's own sessions and subagent runs (nothing here writes),
and what the dashboard reads of a team's sessions: usage per participant and errors
(:mod:`.session_reads`).

Subagent runs are read as stored: an active run whose executing lease is gone is reported with
``lease_alive: false`` (the library marks it ``lost`` the next time its parent reads it).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from ..agent.deferral import deferred_calls
from ..keys import RUN, RunKeys, SessionAddress, family_of, user_runs_prefix
from ..listing import UNREADABLE, unreadable
from ..sessions import SessionRecord, SessionStorage
from ..store.base import Key
from ..subagents.runs import RunBook, RunRecord, RunStatus
from ..teams import Team
from . import schemas as s
from . import session_reads as reads
from .errors import ControlPlaneError
from .routing import ERROR_RESPONSES, ApiRoute, Call, operator_call

OperatorCall = Annotated[Call, Depends(operator_call)]
_OPERATOR = "Needs an operator token (403 for a member token)."
router = APIRouter(route_class=ApiRoute, responses=ERROR_RESPONSES)


def _storage(call: Call) -> SessionStorage:
    return SessionStorage(call.store)


@router.get(
    "/api/sessions",
    summary="List the operator's sessions",
    response_model=list[s.SessionSummary],
    tags=["sessions"],
    description=_OPERATOR,
)
async def list_sessions(
    call: OperatorCall,
    agent: Annotated[str | None, Query(description="only the sessions of this agent")] = None,
) -> list[s.SessionSummary]:
    p = call.principal
    records = await _storage(call).list_sessions(p.user_id, agent, org_id=p.org_id)
    return [
        s.SessionSummary(
            agent_id=r.agent_id,
            session_id=r.session_id,
            source=r.source.value,
            version=r.version,
            messages=len(r.state.context),
            model=reads.model_of(r),
            created_at=r.created_at,
            updated_at=r.updated_at,
            team_id=r.team_id,
            deferred=deferred_calls(r.state),
            **reads.usage_of(r).model_dump(),
        )
        for r in sorted(records, key=lambda r: r.updated_at, reverse=True)
    ]


@router.get(
    "/api/sessions/{agent_id}/{session_id:path}",
    summary="Get a session",
    response_model=SessionRecord,
    tags=["sessions"],
    description=_OPERATOR,
)
async def get_session(agent_id: str, session_id: str, call: OperatorCall) -> SessionRecord:
    p = call.principal
    agent, session = agent_id, session_id
    record = await _storage(call).get_session(p.user_id, agent, session, org_id=p.org_id)
    if record is None:
        raise ControlPlaneError(f"no session {session!r} of agent {agent!r} for this user", 404)
    return record


async def _team_sessions(call: Call) -> tuple[Team, dict[str, SessionRecord]]:
    """The team and its participants' sessions: the lead's sessions (one agent's listing) and
    each member's session, read by address (a member's agent is named after it)."""
    team = await call.team()
    p = call.principal
    storage = _storage(call)
    records = list(await storage.list_sessions(p.user_id, team.lead, org_id=p.org_id))
    for m in team.members:
        addr = SessionAddress(p.org_id, p.user_id, m.name, m.session_id)
        try:
            record = await storage.get_at(addr)
        except UNREADABLE as exc:  # one bad record is logged and skipped, never a 500
            unreadable("session", m.session_id, addr.key, exc)
            continue
        if record is not None:
            records.append(record)
    return team, reads.team_sessions(team, records)


@router.get(
    "/api/teams/{team_id}/usage",
    summary="Tokens and cost of each participant of a team, and the team's total",
    response_model=reads.TeamUsage,
    tags=["sessions"],
    description=_OPERATOR + " A cost_usd of null: no response of the session carried a cost.",
)
async def team_usage(team_id: str, call: OperatorCall) -> reads.TeamUsage:
    team, sessions = await _team_sessions(call)
    return reads.team_usage(team, sessions)


@router.get(
    "/api/teams/{team_id}/errors",
    summary="What went wrong in a team: failed tasks and members, error tool results",
    response_model=list[reads.ErrorEntry],
    tags=["sessions"],
    description=_OPERATOR + " Newest first.",
)
async def team_errors(team_id: str, call: OperatorCall) -> list[reads.ErrorEntry]:
    team, sessions = await _team_sessions(call)
    tasks = await call.client.list_tasks(team.id)
    found = reads.team_errors(team, tasks, sessions)
    found += await _failed_runs(call, {r.session_id: name for name, r in sessions.items()})
    return sorted(found, key=lambda e: e.at.timestamp() if e.at else 0.0, reverse=True)


async def _failed_runs(call: Call, who: dict[str, str]) -> list[reads.ErrorEntry]:
    """The failed or lost subagent runs whose parent session is one of ``who`` (session -> name)."""
    out = []
    for key in await _run_keys(call):
        run_keys, run_id = RunKeys.parse(key)
        if run_keys.session_id not in who:
            continue
        try:
            rec = await RunBook(call.store, *run_keys.scope).get(run_id)
        except UNREADABLE as exc:
            unreadable("run", run_id, key, exc)
            continue
        if rec is not None and rec.status in (RunStatus.FAILED, RunStatus.LOST):
            out.append(reads.run_error(who[run_keys.session_id], rec))
    return out


async def _run_keys(call: Call) -> list[Key]:
    p = call.principal
    prefix = user_runs_prefix(p.org_id, p.user_id)
    keys: list[Key] = []
    while page := await call.store.list_keys(prefix, limit=500, after=keys[-1] if keys else None):
        keys.extend(k for k in page if family_of(k) is RUN)
        if len(page) < 500:
            break
    return keys


@router.get(
    "/api/subagent-runs",
    summary="List the operator's subagent runs",
    response_model=list[s.RunSummary],
    tags=["subagents"],
    description=_OPERATOR,
)
async def list_runs(call: OperatorCall) -> list[s.RunSummary]:
    out = []
    for key in await _run_keys(call):
        run_keys, run_id = RunKeys.parse(key)
        book = RunBook(call.store, *run_keys.scope)
        try:
            rec = await book.get(run_id)
        except UNREADABLE as exc:  # one bad record is logged and skipped, never a 500
            unreadable("run", run_id, key, exc)
            continue
        if rec is None:
            continue
        alive = await call.store.get(run_keys.lease(rec.run_id)) is not None
        out.append(_summary(rec, run_keys.session_id, alive))
    return sorted(out, key=lambda r: r.created_at, reverse=True)


def _summary(rec: RunRecord, session: str, lease_alive: bool) -> s.RunSummary:
    return s.RunSummary(
        parent_session=session,
        lease_alive=lease_alive,
        **rec.model_dump(
            include={
                "run_id",
                "parent_agent",
                "spec",
                "label",
                "task",
                "status",
                "result",
                "error",
                "depth",
                "background",
                "created_at",
                "started_at",
                "ended_at",
            }
        ),
    )
