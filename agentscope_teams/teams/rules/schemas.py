"""Schemas of the team tools: template functions whose signatures and docstrings are what the
model is told (the bodies are never called; :mod:`..lead.tools` binds the implementations)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field

from ...tools import Tool
from ...tools.decorator import make_tool

MAX_WAIT = 3600.0
Status = Literal["pending", "in_progress", "completed", "failed", "cancelled"]
TeamId = str | None
Mode = Literal["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"]


async def create_team(
    name: Annotated[str, Field(min_length=1)],
    description: str = "",
    max_tokens: Annotated[int | None, Field(ge=1)] = None,
    max_budget_usd: Annotated[float | None, Field(gt=0)] = None,
) -> str:
    """Create a team that you lead; it becomes your current team. Then add members with spawnMember.

    Args:
        name: A short name for the team.
        description: The team's goal; every member reads it.
        max_tokens: Tokens all members together may use; default: no team limit.
        max_budget_usd: US dollars all members together may spend; default: no team limit.
    """
    raise NotImplementedError


async def spawn_member(
    name: str,
    spec: str,
    team_id: TeamId = None,
    permission_mode: Mode | None = None,
    plan_approval: bool = False,
    max_tokens: Annotated[int | None, Field(ge=1)] = None,
    max_budget_usd: Annotated[float | None, Field(gt=0)] = None,
) -> str:
    """Add a member to the team, running one of the available agent specs; it starts working on
    claimable tasks and messages at once.

    Args:
        name: The member's name in the team (unique), e.g. "reviewer-1".
        spec: The agent spec it runs, from the list in your instructions.
        team_id: The team; default: your current team.
        permission_mode: The member's permission mode (plan is read-only, acceptEdits lets it
            edit files); default: its spec's, else yours.
        plan_approval: Start it in plan mode: it must send you its plan, which you answer with
            approvePlan, before it may change anything.
        max_tokens: Tokens this member may use; default: no limit of its own.
        max_budget_usd: US dollars this member may spend; default: no limit of its own.
    """
    raise NotImplementedError


async def approve_plan(
    member: str, approve: bool, feedback: str = "", team_id: TeamId = None
) -> str:
    """Answer a member's plan approval request: approved, it leaves plan mode and carries the plan
    out; rejected, it stays in plan mode and reads your feedback.

    Args:
        member: The member that sent the plan.
        approve: True to approve, False to reject.
        feedback: What to change (for a rejection) or to keep in mind.
        team_id: The team; default: your current team.
    """
    raise NotImplementedError


async def delete_team(team_id: TeamId = None) -> str:
    """Stop every member of the team and delete its board and messages.

    Args:
        team_id: The team; default: your current team.
    """
    raise NotImplementedError


async def end_team(team_id: TeamId = None) -> str:
    """End the team when its work is done: it becomes completed, its members stop and its board
    and messages are kept (read-only). A team also ends by itself when your reply ends with every
    task finished (none pending or in progress, at least one completed).

    Args:
        team_id: The team; default: your current team.
    """
    raise NotImplementedError


async def wait_for_team(
    timeout_seconds: Annotated[float, Field(ge=0, le=MAX_WAIT)] = 120, team_id: TeamId = None
) -> str:
    """Wait until every task is completed, failed or cancelled (or the timeout passes); returns
    every task with its status, owner and result or error. When the work is finished, the team
    ends (completed, members stopped) as your reply ends, unless you assign more tasks first.

    Args:
        timeout_seconds: Seconds to wait at most.
        team_id: The team; default: your current team.
    """
    raise NotImplementedError


async def assign_task(
    title: Annotated[str, Field(min_length=1)],
    description: str = "",
    assignee: str | None = None,
    blocked_by: list[str] = [],  # noqa: B006 - a schema default; the template is never called
    team_id: TeamId = None,
    result_schema: dict[str, Any] | None = None,
) -> str:
    """Put a task on the team board; returns its id.

    Args:
        title: What to do, in a few words.
        description: Everything the member needs: files, scope, expected result format.
        assignee: Member who must do it (a spawned member: not you, the lead); omit to let any
            member claim it.
        blocked_by: Ids of tasks that must be completed before this one can start.
        team_id: The team; default: your current team.
        result_schema: Optional JSON schema of the structured result: the member must complete
            the task with data matching it, which you then read as data.
    """
    raise NotImplementedError


async def claim_task(task_id: str | None = None) -> str:
    """Claim a task from the team board: the given one, or the next one you may take.

    Args:
        task_id: The task to claim; omit it to take the oldest claimable task.
    """
    raise NotImplementedError


async def complete_task(task_id: str, result: str, data: Any = None) -> str:
    """Mark a task you claimed as completed, with its result (the lead reads it).

    Args:
        task_id: The task's id.
        result: The outcome: findings, answer or what was done.
        data: The structured result, as JSON; required when the task declares a result schema
            (claimTask shows it), and checked against it.
    """
    raise NotImplementedError


async def fail_task(task_id: str, error: str) -> str:
    """Mark a task you claimed as failed.

    Args:
        task_id: The task's id.
        error: Why it cannot be done.
    """
    raise NotImplementedError


async def list_tasks(status: Status | None = None) -> str:
    """List the tasks on the team board with their status, owner and result.

    Args:
        status: Only tasks with this status.
    """
    raise NotImplementedError


async def list_team_tasks(status: Status | None = None, team_id: TeamId = None) -> str:
    """List the tasks on the team board with their status, owner and result.

    Args:
        status: Only tasks with this status.
        team_id: The team; default: your current team.
    """
    raise NotImplementedError


async def send_message(to: str, content: str) -> str:
    """Send a message to one teammate (or the lead); it is shown to them before their next step.

    Args:
        to: The recipient's member name.
        content: The message.
    """
    raise NotImplementedError


async def send_team_message(to: str, content: str, team_id: TeamId = None) -> str:
    """Send a message to one member of the team; it is shown to them before their next step.

    Args:
        to: The recipient's member name.
        content: The message.
        team_id: The team; default: your current team.
    """
    raise NotImplementedError


async def broadcast_message(content: str) -> str:
    """Send a message to every other member of the team (and the lead).

    Args:
        content: The message.
    """
    raise NotImplementedError


async def broadcast_team_message(content: str, team_id: TeamId = None) -> str:
    """Send a message to every member of the team.

    Args:
        content: The message.
        team_id: The team; default: your current team.
    """
    raise NotImplementedError


def _t(
    fn: Callable[..., Any],
    name: str,
    read_only: bool = False,
    idempotent: bool = False,
    plan_checked: bool = False,
) -> Tool:
    tool = make_tool(fn, name=name, read_only=read_only, idempotent=idempotent)
    return dataclasses.replace(tool, plan_checked=True) if plan_checked else tool


LEAD_TEMPLATES = {
    t.name: t
    for t in (
        _t(create_team, "createTeam"),
        _t(spawn_member, "spawnMember", plan_checked=True),  # plan mode: check_plan_spawn
        _t(approve_plan, "approvePlan"),
        _t(assign_task, "assignTask"),
        _t(wait_for_team, "waitForTeam", read_only=True),
        _t(list_team_tasks, "listTasks", read_only=True),
        _t(send_team_message, "sendMessage"),
        _t(broadcast_team_message, "broadcastMessage"),
        _t(delete_team, "deleteTeam"),
        _t(end_team, "endTeam"),
    )
}
MEMBER_TEMPLATES = {
    t.name: t
    for t in (
        _t(claim_task, "claimTask", idempotent=True),  # a claim again returns the task held
        _t(complete_task, "completeTask"),
        _t(fail_task, "failTask"),
        _t(list_tasks, "listTasks", read_only=True),
        _t(send_message, "sendMessage"),
        _t(broadcast_message, "broadcastMessage"),
    )
}
