"""The team and task-board routes: the :class:`~agentscope_teams.teams.TeamClient` operations.

Every handler runs the operation through a :class:`~agentscope_teams.teams.LocalTeamClient` bound
to the (org, user) of the caller's token; the acting member comes from the token (see
:meth:`~.routing.Call.acting`), never from the body alone.

A team's DELETE can land while a request is served: a read of the board then checks the team
again (:meth:`~.routing.Call.settled`), and a failure it causes is answered as the 404 of the
deleted team, never as a missing task or a store error (see :class:`~.routing.ApiRoute`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response

from ..errors import UnknownMemberError
from ..teams import Member, MemberStatus, Task, TaskStatus, Team, TeamStatus
from ..teams.lifecycle import parse_age, prune_teams, visible
from . import schemas as s
from .auth import first_member_token, issue_member_token, revoke_team_tokens
from .routing import ERROR_RESPONSES, ApiRoute, Call, operator_call, token_call

T = "/api/teams/{team_id}"
TASK = T + "/tasks/{task_id}"
TokenCall = Annotated[Call, Depends(token_call)]
OperatorCall = Annotated[Call, Depends(operator_call)]

_STATUS_DOC = "only tasks with this status"
_STATUSES: dict[str, Any] = {"enum": [s.value for s in TaskStatus]}

router = APIRouter(route_class=ApiRoute, tags=["teams"], responses=ERROR_RESPONSES)


@router.get(
    "/api/teams",
    summary="List teams (active ones unless ?all=true or ?status=)",
    response_model=list[Team],
    description="A member token lists its own team, whatever its status.",
)
async def list_teams(
    call: TokenCall,
    status: Annotated[TeamStatus | None, Query(description="only teams in this status")] = None,
    all: Annotated[bool, Query(description="also the teams that ended")] = False,
) -> list[Team]:
    if call.principal.is_operator:
        return visible(await call.client.list_teams(), include_ended=all, status=status)
    assert call.principal.team_id is not None
    return [await call.client.get_team(call.principal.team_id)]


@router.post(
    "/api/teams/prune",
    summary="Delete the ended teams that ended longer ago than older_than",
    response_model=s.PrunedTeams,
    description="Needs an operator token (403 for a member token). Active teams are never pruned.",
)
async def prune(body: s.PruneTeams, call: OperatorCall) -> s.PrunedTeams:
    age = parse_age(body.older_than)
    teams = await prune_teams(call.client, age, dry_run=body.dry_run)
    if not body.dry_run:
        p = call.principal
        for team in teams:
            await revoke_team_tokens(call.store, p.org_id, p.user_id, team.id)
    return s.PrunedTeams(teams=list(teams), dry_run=body.dry_run)


@router.post(
    "/api/teams",
    summary="Create a team",
    status_code=201,
    response_model=s.CreatedTeam,
    description="Needs an operator token (403 for a member token).",
)
async def create_team(body: s.CreateTeam, call: OperatorCall) -> s.CreatedTeam:
    members = [Member(**m.model_dump(exclude_none=True)) for m in body.members]
    team = await call.client.create_team(
        body.name,
        body.lead,
        members,
        body.description,
        max_tokens=body.max_tokens,
        max_budget_usd=body.max_budget_usd,
    )
    p = call.principal
    tokens = {
        m.name: await first_member_token(call.store, p.org_id, p.user_id, team.id, m.name)
        for m in team.members
    }
    return s.CreatedTeam(team=team, tokens=tokens)


@router.get(T, summary="Get a team", response_model=Team)
async def get_team(team_id: str, call: TokenCall) -> Team:
    return await call.team()


@router.delete(T, summary="Delete a team (operator or lead)", status_code=204)
async def delete_team(team_id: str, call: TokenCall) -> None:
    team = await call.require_lead("delete the team")
    await call.client.delete_team(team.id)
    p = call.principal
    await revoke_team_tokens(call.store, p.org_id, p.user_id, team.id)


@router.put(T + "/status", summary="Set the team status (operator or lead)", response_model=Team)
async def set_team_status(team_id: str, body: s.SetTeamStatus, call: TokenCall) -> Team:
    team = await call.require_lead("change the team's status")
    return await call.client.set_team_status(team.id, body.status)


@router.post(
    T + "/archive",
    summary="Archive a team (operator or lead): it ends, its members stop, its records stay",
    response_model=Team,
)
async def archive_team(team_id: str, call: TokenCall) -> Team:
    team = await call.require_lead("archive the team")
    return await call.client.set_team_status(team.id, TeamStatus.ARCHIVED)


@router.post(
    T + "/members",
    summary="Spawn a member (operator or lead); 200 without a token if it already exists",
    status_code=201,
    response_model=s.SpawnedMember,
    responses={200: {"model": s.SpawnedMember, "description": "The member existed (no token)"}},
)
async def spawn_member(
    team_id: str, body: s.SpawnMember, call: TokenCall, response: Response
) -> s.SpawnedMember:
    """201 and a token when this request created the member (the team's conditional write
    decides, so one racer wins); 200 and no token when it existed: nothing minted or revoked."""
    team = await call.require_lead("spawn members")
    member, created = await call.client.add_member(
        team.id,
        body.name,
        body.spec,
        body.session_id,
        permission_mode=body.permission_mode,
        plan_approval=body.plan_approval,
        max_tokens=body.max_tokens,
        max_budget_usd=body.max_budget_usd,
        lead_mode=body.lead_mode,
    )
    token = None
    if created:
        p = call.principal
        token = await first_member_token(call.store, p.org_id, p.user_id, team.id, member.name)
    else:
        response.status_code = 200
    return s.SpawnedMember(member=member, token=token)


@router.put(T + "/members/{name}/status", summary="Set a member's status", response_model=Member)
async def set_member_status(
    team_id: str, name: str, body: s.SetMemberStatus, call: TokenCall
) -> Member:
    acting = await call.acting(name)
    if body.stop_event is not None and body.status is MemberStatus.STOPPED:
        reason = body.stop_reason or ""
        return await call.client.stop_member(call.team_id, acting, reason, event=body.stop_event)
    return await call.client.set_member_status(call.team_id, acting, body.status)


@router.post(
    T + "/members/{name}/token",
    summary="Issue a new token for a participant",
    status_code=201,
    response_model=s.IssuedToken,
    description="Needs an operator token (403 for a member token).",
)
async def member_token(team_id: str, name: str, call: OperatorCall) -> s.IssuedToken:
    team = await call.team()
    if name not in team.participants():
        raise UnknownMemberError(f"{name!r} is not a participant of team {team.id!r}")
    p = call.principal
    return s.IssuedToken(
        token=await issue_member_token(call.store, p.org_id, p.user_id, team.id, name)
    )


@router.get(T + "/tasks", summary="List tasks", response_model=list[Task])
async def list_tasks(
    team_id: str,
    call: TokenCall,
    status: Annotated[
        str | None, Query(description=_STATUS_DOC, json_schema_extra=_STATUSES)
    ] = None,
) -> list[Task]:
    wanted = None if status is None else TaskStatus(status)  # 422 naming the value
    return await call.settled(await call.client.list_tasks(call.team_id, wanted))


@router.get(
    T + "/open",
    summary="Unfinished tasks, then the finished tasks pending ones wait on (no full scan)",
    response_model=list[Task],
)
async def open_board(team_id: str, call: TokenCall) -> list[Task]:
    return await call.settled(await call.client.open_board(call.team_id))


@router.post(T + "/tasks", summary="Assign (create) a task", status_code=201, response_model=Task)
async def assign_task(team_id: str, body: s.AssignTask, call: TokenCall) -> Task:
    actor = await call.acting(body.actor, default_lead=True)
    fields: dict[str, Any] = body.model_dump(exclude={"actor"})
    return await call.client.assign_task(call.team_id, actor=actor, **fields)


@router.get(TASK, summary="Get a task", response_model=Task)
async def get_task(team_id: str, task_id: str, call: TokenCall) -> Task:
    return await call.settled(await call.client.get_task(call.team_id, task_id))


@router.post(
    T + "/claim",
    summary="Claim the next claimable (or a named) task",
    response_model=s.ClaimResult,
)
async def claim_next(team_id: str, body: s.Claim, call: TokenCall) -> s.ClaimResult:
    member = await call.acting(body.member)
    task = await call.client.claim_task(
        call.team_id,
        member,
        body.task_id,
        task_lease=body.lease_seconds,
        prefer_own=body.prefer_own,
    )
    return s.ClaimResult(task=task)


@router.post(TASK + "/claim", summary="Claim a task", response_model=Task)
async def claim(team_id: str, task_id: str, body: s.Claim, call: TokenCall) -> Task:
    member = await call.acting(body.member)
    if body.task_id not in (None, task_id):
        raise ValueError(f"the body names task {body.task_id!r} but the path names {task_id!r}")
    task = await call.client.claim_task(
        call.team_id, member, task_id, task_lease=body.lease_seconds
    )
    assert task is not None
    return task


@router.post(TASK + "/complete", summary="Complete a task", response_model=Task)
async def complete(team_id: str, task_id: str, body: s.Complete, call: TokenCall) -> Task:
    member = await call.acting(body.member)
    return await call.client.complete_task(
        call.team_id, member, task_id, body.result, data=body.data
    )


@router.post(TASK + "/fail", summary="Fail a task", response_model=Task)
async def fail(team_id: str, task_id: str, body: s.Fail, call: TokenCall) -> Task:
    member = await call.acting(body.member)
    return await call.client.fail_task(call.team_id, member, task_id, body.error)


@router.post(TASK + "/release", summary="Release a task", response_model=Task)
async def release(team_id: str, task_id: str, body: s.Release, call: TokenCall) -> Task:
    member = await call.acting(body.member)
    return await call.client.release_task(call.team_id, member, task_id)


@router.post(TASK + "/heartbeat", summary="Renew a task lease", response_model=Task)
async def renew_task_lease(team_id: str, task_id: str, body: s.Heartbeat, call: TokenCall) -> Task:
    member = await call.acting(body.member)
    return await call.client.renew_task_lease(
        call.team_id, member, task_id, task_lease=body.lease_seconds
    )


@router.post(TASK + "/cancel", summary="Cancel a task (operator or lead)", response_model=Task)
async def cancel(team_id: str, task_id: str, body: s.Cancel, call: TokenCall) -> Task:
    team = await call.require_lead("cancel tasks")
    actor = await call.acting(body.actor, default_lead=True)
    return await call.client.cancel_task(team.id, task_id, actor=actor, reason=body.reason)


@router.post(
    T + "/reap", summary="Return tasks with expired leases to pending", response_model=list[Task]
)
async def reap(team_id: str, call: TokenCall) -> list[Task]:
    return await call.client.reap_expired(call.team_id)


@router.post(
    T + "/wait", summary="Wait until no task is open (at most 60 s)", response_model=s.WaitResult
)
async def wait(team_id: str, body: s.Wait, call: TokenCall) -> s.WaitResult:
    return s.WaitResult(done=await call.client.wait_for_tasks(call.team_id, body.timeout))
