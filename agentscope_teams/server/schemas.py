"""Request and response bodies of the HTTP API (pydantic; request bodies reject unknown fields).

The acting member of a board or mailbox operation (``member`` / ``sender`` / ``actor``) may be left
out: it is then the member of the caller's token. A member token naming anybody else gets 403; an
operator token may name any participant of its own teams.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..agent.deferral import DeferredCall
from ..errors import ConfigurationError
from ..state import PermissionMode
from ..subagents.runs import RunStatus
from ..teams import Member, MemberStatus, Task, Team, TeamStatus
from ..teams.lifecycle import parse_age
from ..teams.rules.limits import MAX_ATTEMPTS, MAX_TASK_LEASE


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemberIn(_Input):
    """A member given at team creation (its plan review and prompt record start empty)."""

    name: str
    spec: str = ""
    status: MemberStatus = MemberStatus.SPAWNED
    session_id: str | None = None
    permission_mode: PermissionMode | None = None
    plan_approval: bool = False


class CreateTeam(_Input):
    name: str = Field(min_length=1)
    description: str = ""  # as the createTeam tool takes it
    lead: str = "lead"
    members: list[MemberIn] = Field(default_factory=list)
    max_tokens: int | None = Field(default=None, ge=1)
    max_budget_usd: float | None = Field(default=None, gt=0)


class SpawnMember(_Input):
    name: str
    spec: str = ""
    session_id: str | None = None
    permission_mode: str | None = None
    plan_approval: bool = False
    max_tokens: int | None = Field(default=None, ge=1)
    max_budget_usd: float | None = Field(default=None, gt=0)
    #: The mode the lead's session is in (the member inherits it as its parent's mode).
    lead_mode: str | None = None


class SetTeamStatus(_Input):
    status: TeamStatus


class SetMemberStatus(_Input):
    status: MemberStatus
    #: With status ``stopped``: a hook's ``stopReason`` and its ``event``, which stop the member
    #: for good (``LocalTeamClient.stop_member``).
    stop_reason: str | None = None
    stop_event: str | None = None


class AssignTask(_Input):
    title: str = Field(min_length=1)
    description: str = ""
    assignee: str | None = None
    blocked_by: list[str] = Field(default_factory=list)
    max_attempts: int = Field(default=3, ge=1, le=MAX_ATTEMPTS)
    actor: str | None = None
    result_schema: dict[str, Any] | None = None


class Claim(_Input):
    member: str | None = None
    task_id: str | None = None
    lease_seconds: float | None = Field(default=None, gt=0, le=MAX_TASK_LEASE, allow_inf_nan=False)
    prefer_own: bool = False


class Complete(_Input):
    member: str | None = None
    result: str = ""
    data: Any = None


class Fail(_Input):
    member: str | None = None
    error: str


class Release(_Input):
    member: str | None = None


class Heartbeat(_Input):
    member: str | None = None
    lease_seconds: float | None = Field(default=None, gt=0, le=MAX_TASK_LEASE, allow_inf_nan=False)


class Cancel(_Input):
    actor: str | None = None
    reason: str = ""


class Wait(_Input):
    timeout: float = Field(ge=0, le=60)


class SendMessage(_Input):
    sender: str | None = None
    to: str
    content: str


class Broadcast(_Input):
    sender: str | None = None
    content: str


class Acknowledge(_Input):
    cursor: int = Field(ge=0)


class CreatedTeam(BaseModel):
    """A new team and one token per initial member (each shown only here)."""

    team: Team
    tokens: dict[str, str]


class SpawnedMember(BaseModel):
    """A spawned member and its token: shown only here, when this request created the member
    (201); null when the member already existed (200), whose token stays as it was."""

    member: Member
    token: str | None


class IssuedToken(BaseModel):
    token: str
    expires_in: float | None = None


class ClaimResult(BaseModel):
    """The claimed task, or null when no task is claimable."""

    task: Task | None


class WaitResult(BaseModel):
    done: bool


class PruneTeams(_Input):
    """Delete the caller's ended teams that ended more than ``older_than`` ago (``7d``, ``12h``,
    ``30m``, ``2w``); ``dry_run`` only lists them."""

    older_than: str = Field(examples=["7d"])
    dry_run: bool = False

    @field_validator("older_than")
    @classmethod
    def _check_age(cls, v: str) -> str:
        try:
            parse_age(v)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None
        return v


class PrunedTeams(BaseModel):
    """The teams pruned (or, with ``dry_run``, that would be), oldest first."""

    teams: list[Team]
    dry_run: bool


class Cursor(BaseModel):
    cursor: int


class Whoami(BaseModel):
    kind: str
    org_id: str | None
    user_id: str | None
    team_id: str | None
    member: str | None


class SessionSummary(BaseModel):
    """A session as listed: its model, team and reported usage (``cost_usd`` None: unknown);
    ``deferred``: the tool calls a PreToolUse hook deferred, which the next call on the session
    decides again (tool, input, the hook's reason)."""

    agent_id: str
    session_id: str
    source: str
    version: int
    messages: int
    model: str | None
    created_at: datetime
    updated_at: datetime
    team_id: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cost_usd: float | None = None
    deferred: list[DeferredCall] = Field(default_factory=list)


class RunSummary(BaseModel):
    """A subagent run as stored; ``lease_alive`` is False for an active run nobody executes."""

    run_id: str
    parent_session: str
    parent_agent: str
    spec: str
    label: str | None
    task: str
    status: RunStatus
    result: str | None
    error: str | None
    depth: int
    background: bool
    lease_alive: bool
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None


class FieldProblem(BaseModel):
    """One problem of an invalid request: the field's dotted path (``body.title``) and what is
    wrong with it."""

    field: str
    message: str


class ErrorDetail(BaseModel):
    type: str
    message: str
    #: For a ``ValidationError``: each problem by field (the message is pydantic's whole text).
    errors: list[FieldProblem] | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail
