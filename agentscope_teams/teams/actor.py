"""``TeamActor``: one participant (the lead or a member) acting in a team, its name bound once.

Not to be confused with :class:`~.rules.models.Member` (a member's record in the team) or
:class:`~.member.extension.TeamMemberExtension` (what a member agent runs with). The tools of an agent hold
a ``TeamActor``; the sender of a message and the claimer of a task are always the bound name, never
something a model writes into a tool argument. (Formerly ``TeamMember``.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .protocol import TeamClient
from .rules.models import Task, TaskStatus, Team, TeamMessage


class TeamActor:
    """Acts as ``name`` in team ``team_id`` through any :class:`TeamClient`."""

    def __init__(self, client: TeamClient, team_id: str, name: str) -> None:
        self.client, self.team_id, self.name = client, team_id, name

    def __repr__(self) -> str:
        return f"TeamActor(team_id={self.team_id!r}, name={self.name!r})"

    async def team(self) -> Team:
        return await self.client.get_team(self.team_id)

    async def assign(
        self,
        title: str,
        description: str = "",
        assignee: str | None = None,
        blocked_by: Sequence[str] = (),
        max_attempts: int = 3,
        result_schema: Mapping[str, Any] | None = None,
    ) -> Task:
        return await self.client.assign_task(
            self.team_id,
            title,
            description,
            assignee=assignee,
            blocked_by=blocked_by,
            max_attempts=max_attempts,
            actor=self.name,
            result_schema=result_schema,
        )

    async def claim(
        self,
        task_id: str | None = None,
        *,
        task_lease: float | None = None,
        prefer_own: bool = False,
    ) -> Task | None:
        return await self.client.claim_task(
            self.team_id, self.name, task_id, task_lease=task_lease, prefer_own=prefer_own
        )

    async def complete(self, task_id: str, result: str = "", data: Any = None) -> Task:
        return await self.client.complete_task(self.team_id, self.name, task_id, result, data=data)

    async def fail(self, task_id: str, error: str) -> Task:
        return await self.client.fail_task(self.team_id, self.name, task_id, error)

    async def release(self, task_id: str) -> Task:
        return await self.client.release_task(self.team_id, self.name, task_id)

    async def renew_task_lease(self, task_id: str, *, task_lease: float | None = None) -> Task:
        return await self.client.renew_task_lease(
            self.team_id, self.name, task_id, task_lease=task_lease
        )

    async def get_task(self, task_id: str) -> Task:
        return await self.client.get_task(self.team_id, task_id)

    async def tasks(self, status: TaskStatus | None = None) -> list[Task]:
        return await self.client.list_tasks(self.team_id, status)

    async def open_board(self) -> list[Task]:
        return await self.client.open_board(self.team_id)

    async def send(self, to: str, content: str) -> TeamMessage:
        return await self.client.send_message(self.team_id, self.name, to, content)

    async def broadcast(self, content: str) -> list[TeamMessage]:
        return await self.client.broadcast_message(self.team_id, self.name, content)

    async def read(self, *, after: int = 0, limit: int = 100) -> list[TeamMessage]:
        return await self.client.read_messages(self.team_id, self.name, after=after, limit=limit)

    async def unread(self, *, limit: int = 100) -> list[TeamMessage]:
        return await self.client.unread(self.team_id, self.name, limit=limit)

    async def acknowledge(self, cursor: int) -> int:
        return await self.client.acknowledge(self.team_id, self.name, cursor)
