"""``TeamClient``: the Agent Teams API as a protocol, plain pydantic data in and out.

:class:`~agentscope_teams.teams.client.LocalTeamClient` implements it over any ``BaseStore``, and
:class:`~agentscope_teams.server.client.ControlPlaneTeamClient` over the control plane's HTTP API.
The acting member is always an explicit argument (``member`` / ``sender`` / ``actor``); a server
checks it against the caller's token. :class:`~agentscope_teams.teams.actor.TeamActor` binds one
member to a client for tools. Whether a member may claim a task is decided by
:func:`~agentscope_teams.teams.rules.eligibility.claim_verdict` behind every implementation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .rules.models import Member, MemberStatus, Task, TaskStatus, Team, TeamMessage, TeamStatus


@runtime_checkable
class TeamClient(Protocol):
    """Teams, their task board and their mailbox, scoped to the caller's (org, user)."""

    async def create_team(
        self,
        name: str,
        lead: str = "lead",
        members: Sequence[Member] = (),
        description: str = "",
        *,
        max_tokens: int | None = None,
        max_budget_usd: float | None = None,
    ) -> Team: ...

    async def spawn_member(
        self,
        team_id: str,
        name: str,
        spec: str,
        session_id: str | None = None,
        *,
        permission_mode: str | None = None,
        plan_approval: bool = False,
        max_tokens: int | None = None,
        max_budget_usd: float | None = None,
        lead_mode: str | None = None,
    ) -> Member: ...

    async def get_team(self, team_id: str) -> Team: ...

    async def list_teams(self) -> list[Team]: ...

    async def delete_team(self, team_id: str) -> None: ...

    async def set_team_status(self, team_id: str, status: TeamStatus) -> Team: ...

    async def set_member_status(self, team_id: str, name: str, status: MemberStatus) -> Member: ...

    async def stop_member(self, team_id: str, name: str, reason: str, *, event: str) -> Member: ...

    async def assign_task(
        self,
        team_id: str,
        title: str,
        description: str = "",
        assignee: str | None = None,
        blocked_by: Sequence[str] = (),
        max_attempts: int = 3,
        *,
        actor: str | None = None,
        result_schema: Mapping[str, Any] | None = None,
    ) -> Task:
        """Create a task; with ``result_schema`` (a JSON schema) its completion must carry
        ``data`` matching it."""
        ...

    async def claim_task(
        self,
        team_id: str,
        member: str,
        task_id: str | None = None,
        *,
        task_lease: float | None = None,
        prefer_own: bool = False,
    ) -> Task | None:
        """Claim ``task_id``, or the oldest task ``member`` may claim (None if there is none).

        A member claiming a task it holds renews its lease. With ``prefer_own`` (and no
        ``task_id``), a task the member holds already is returned (lease renewed) before a new one.
        """
        ...

    async def complete_task(
        self, team_id: str, member: str, task_id: str, result: str = "", *, data: Any = None
    ) -> Task:
        """Complete an owned task with ``result`` text and structured ``data`` (JSON), checked
        against the task's ``result_schema`` (``OutputValidationError``; nothing written)."""
        ...

    async def fail_task(self, team_id: str, member: str, task_id: str, error: str) -> Task: ...

    async def release_task(self, team_id: str, member: str, task_id: str) -> Task: ...

    async def renew_task_lease(
        self, team_id: str, member: str, task_id: str, *, task_lease: float | None = None
    ) -> Task: ...

    async def cancel_task(
        self, team_id: str, task_id: str, *, actor: str | None = None, reason: str = ""
    ) -> Task: ...

    async def get_task(self, team_id: str, task_id: str) -> Task: ...

    async def list_tasks(self, team_id: str, status: TaskStatus | None = None) -> list[Task]: ...

    async def open_board(self, team_id: str) -> list[Task]:
        """Unfinished tasks (oldest first, with ``blocked_reason``), then the finished tasks pending
        ones wait on; read through the open index, never a scan of the whole board."""
        ...

    async def reap_expired(self, team_id: str) -> list[Task]: ...

    async def wait_for_tasks(self, team_id: str, timeout: float) -> bool: ...  # noqa: ASYNC109

    async def send_message(
        self, team_id: str, sender: str, to: str, content: str
    ) -> TeamMessage: ...

    async def broadcast_message(
        self, team_id: str, sender: str, content: str
    ) -> list[TeamMessage]: ...

    async def read_messages(
        self, team_id: str, member: str, *, after: int = 0, limit: int = 100
    ) -> list[TeamMessage]: ...

    async def acknowledge(self, team_id: str, member: str, cursor: int) -> int: ...

    async def unread(self, team_id: str, member: str, *, limit: int = 100) -> list[TeamMessage]: ...
