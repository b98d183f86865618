"""The team and task-board routes: the :class:`~agentscope_teams.teams.TeamClient` operations.

Every handler runs the operation through a :class:`~agentscope_teams.teams.LocalTeamClient` bound
to the (org, user) of the caller's token; the acting member comes from the token (see
:meth:`~.routing.Call.acting`), never from the body alone.

A team's DELETE can land while a request is served: a read of the board then checks the team
again (:meth:`~.routing.Call.settled`), and a failure it causes is answered as the 404 of the
deleted team, never as a missing task or a store error (see :func:`~.routing.routes`).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from ..errors import UnknownMemberError
from ..teams import Member, Task, TaskStatus, Team
from . import schemas as s
from .auth import first_member_token, issue_member_token, revoke_team_tokens
from .routing import Call, Endpoint

T = "/api/teams/{team_id}"
TASK = T + "/tasks/{task_id}"


async def list_teams(call: Call) -> list[Team]:
    if call.principal.is_operator:
        return await call.client.list_teams()
    assert call.principal.team_id is not None
    return [await call.client.get_team(call.principal.team_id)]


async def create_team(call: Call) -> s.CreatedTeam:
    body = await call.body(s.CreateTeam)
    members = [Member(**m.model_dump(exclude_none=True)) for m in body.members]
    team = await call.client.create_team(
        body.name,
        body.lead,
        members,
        max_tokens=body.max_tokens,
        max_budget_usd=body.max_budget_usd,
    )
    p = call.principal
    tokens = {
        m.name: await first_member_token(call.store, p.org_id, p.user_id, team.id, m.name)
        for m in team.members
    }
    return s.CreatedTeam(team=team, tokens=tokens)


async def get_team(call: Call) -> Team:
    return await call.team()


async def delete_team(call: Call) -> None:
    team = await call.require_lead("delete the team")
    await call.client.delete_team(team.id)
    p = call.principal
    await revoke_team_tokens(call.store, p.org_id, p.user_id, team.id)


async def set_team_status(call: Call) -> Team:
    body = await call.body(s.SetTeamStatus)
    team = await call.require_lead("change the team's status")
    return await call.client.set_team_status(team.id, body.status)


async def spawn_member(call: Call) -> JSONResponse:
    """201 and a token when this request created the member (the team's conditional write
    decides, so one racer wins); 200 and no token when it existed: nothing minted or revoked."""
    body = await call.body(s.SpawnMember)
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
    )
    token = None
    if created:
        p = call.principal
        token = await first_member_token(call.store, p.org_id, p.user_id, team.id, member.name)
    spawned = s.SpawnedMember(member=member, token=token)
    return JSONResponse(spawned.model_dump(mode="json"), status_code=201 if created else 200)


async def set_member_status(call: Call) -> Member:
    body = await call.body(s.SetMemberStatus)
    name = await call.acting(call.path("name"))
    return await call.client.set_member_status(call.team_id, name, body.status)


async def member_token(call: Call) -> s.IssuedToken:
    team = await call.team()
    name = call.path("name")
    if name not in team.participants():
        raise UnknownMemberError(f"{name!r} is not a participant of team {team.id!r}")
    p = call.principal
    return s.IssuedToken(
        token=await issue_member_token(call.store, p.org_id, p.user_id, team.id, name)
    )


async def list_tasks(call: Call) -> list[Task]:
    raw = call.request.query_params.get("status")
    status = None if raw is None else TaskStatus(raw)
    return await call.settled(await call.client.list_tasks(call.team_id, status))


async def open_board(call: Call) -> list[Task]:
    return await call.settled(await call.client.open_board(call.team_id))


async def assign_task(call: Call) -> Task:
    body = await call.body(s.AssignTask)
    actor = await call.acting(body.actor, default_lead=True)
    fields: dict[str, Any] = body.model_dump(exclude={"actor"})
    return await call.client.assign_task(call.team_id, actor=actor, **fields)


async def get_task(call: Call) -> Task:
    return await call.settled(await call.client.get_task(call.team_id, call.path("task_id")))


async def claim_next(call: Call) -> s.ClaimResult:
    body = await call.body(s.Claim)
    member = await call.acting(body.member)
    task = await call.client.claim_task(
        call.team_id,
        member,
        body.task_id,
        task_lease=body.lease_seconds,
        prefer_own=body.prefer_own,
    )
    return s.ClaimResult(task=task)


async def claim(call: Call) -> Task:
    body = await call.body(s.Claim)
    member = await call.acting(body.member)
    task_id = call.path("task_id")
    if body.task_id not in (None, task_id):
        raise ValueError(f"the body names task {body.task_id!r} but the path names {task_id!r}")
    task = await call.client.claim_task(
        call.team_id, member, task_id, task_lease=body.lease_seconds
    )
    assert task is not None
    return task


async def complete(call: Call) -> Task:
    body = await call.body(s.Complete)
    member = await call.acting(body.member)
    return await call.client.complete_task(
        call.team_id, member, call.path("task_id"), body.result, data=body.data
    )


async def fail(call: Call) -> Task:
    body = await call.body(s.Fail)
    member = await call.acting(body.member)
    return await call.client.fail_task(call.team_id, member, call.path("task_id"), body.error)


async def release(call: Call) -> Task:
    body = await call.body(s.Release)
    member = await call.acting(body.member)
    return await call.client.release_task(call.team_id, member, call.path("task_id"))


async def renew_task_lease(call: Call) -> Task:
    body = await call.body(s.Heartbeat)
    member = await call.acting(body.member)
    return await call.client.renew_task_lease(
        call.team_id, member, call.path("task_id"), task_lease=body.lease_seconds
    )


async def cancel(call: Call) -> Task:
    body = await call.body(s.Cancel)
    team = await call.require_lead("cancel tasks")
    actor = await call.acting(body.actor, default_lead=True)
    return await call.client.cancel_task(
        team.id, call.path("task_id"), actor=actor, reason=body.reason
    )


async def reap(call: Call) -> list[Task]:
    return await call.client.reap_expired(call.team_id)


async def wait(call: Call) -> s.WaitResult:
    body = await call.body(s.Wait)
    return s.WaitResult(done=await call.client.wait_for_tasks(call.team_id, body.timeout))


def _ep(method: str, path: str, handler: Any, summary: str, **kw: Any) -> Endpoint:
    return Endpoint(method, path, handler, summary, **kw)


ENDPOINTS = [
    _ep("GET", "/api/teams", list_teams, "List teams", response=Team, many=True),
    _ep(
        "POST",
        "/api/teams",
        create_team,
        "Create a team",
        body=s.CreateTeam,
        response=s.CreatedTeam,
        status=201,
        access="operator",
    ),
    _ep("GET", T, get_team, "Get a team", response=Team),
    _ep("DELETE", T, delete_team, "Delete a team (operator or lead)", status=204),
    _ep(
        "PUT",
        T + "/status",
        set_team_status,
        "Set the team status (operator or lead)",
        body=s.SetTeamStatus,
        response=Team,
    ),
    _ep(
        "POST",
        T + "/members",
        spawn_member,
        "Spawn a member (operator or lead); 200 without a token if it already exists",
        body=s.SpawnMember,
        response=s.SpawnedMember,
        status=201,
        also_ok=(200,),
    ),
    _ep(
        "PUT",
        T + "/members/{name}/status",
        set_member_status,
        "Set a member's status",
        body=s.SetMemberStatus,
        response=Member,
    ),
    _ep(
        "POST",
        T + "/members/{name}/token",
        member_token,
        "Issue a new token for a participant",
        response=s.IssuedToken,
        status=201,
        access="operator",
    ),
    _ep(
        "GET",
        T + "/tasks",
        list_tasks,
        "List tasks",
        response=Task,
        many=True,
        query=(("status", "only tasks with this status"),),
    ),
    _ep(
        "GET",
        T + "/open",
        open_board,
        "Unfinished tasks, then the finished tasks pending ones wait on (no full scan)",
        response=Task,
        many=True,
    ),
    _ep(
        "POST",
        T + "/tasks",
        assign_task,
        "Assign (create) a task",
        body=s.AssignTask,
        response=Task,
        status=201,
    ),
    _ep("GET", TASK, get_task, "Get a task", response=Task),
    _ep(
        "POST",
        T + "/claim",
        claim_next,
        "Claim the next claimable (or a named) task",
        body=s.Claim,
        response=s.ClaimResult,
    ),
    _ep("POST", TASK + "/claim", claim, "Claim a task", body=s.Claim, response=Task),
    _ep("POST", TASK + "/complete", complete, "Complete a task", body=s.Complete, response=Task),
    _ep("POST", TASK + "/fail", fail, "Fail a task", body=s.Fail, response=Task),
    _ep("POST", TASK + "/release", release, "Release a task", body=s.Release, response=Task),
    _ep(
        "POST",
        TASK + "/heartbeat",
        renew_task_lease,
        "Renew a task lease",
        body=s.Heartbeat,
        response=Task,
    ),
    _ep(
        "POST",
        TASK + "/cancel",
        cancel,
        "Cancel a task (operator or lead)",
        body=s.Cancel,
        response=Task,
    ),
    _ep(
        "POST",
        T + "/reap",
        reap,
        "Return tasks with expired leases to pending",
        response=Task,
        many=True,
    ),
    _ep(
        "POST",
        T + "/wait",
        wait,
        "Wait until no task is open (at most 60 s)",
        body=s.Wait,
        response=s.WaitResult,
    ),
]
