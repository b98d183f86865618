"""``ControlPlaneTeamClient``: the :class:`~agentscope_teams.teams.TeamClient` protocol over HTTP.

A worker on another host joins a team with only the control plane's URL and its member token; it
never touches the store. Errors come back as the same classes a
:class:`~agentscope_teams.teams.LocalTeamClient` raises (``ClaimConflict``, ``VersionConflict``,
``UnknownTeamError``, ...), mapped from the status code and the error ``type`` (see
:mod:`.errors`); 401/403 raise :class:`~.errors.ControlPlaneAuthError`.

:meth:`create_team` and :meth:`spawn_member` (operator or lead) also receive each *new* member's
token (re-spawning an existing member returns none); they are kept in :attr:`ControlPlaneTeamClient.member_tokens` (``(team_id, name) -> token``)
to hand to the workers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import quote

import anyio
import httpx
from pydantic import TypeAdapter

from .. import tracing
from ..teams import Member, MemberStatus, Task, TaskStatus, Team, TeamMessage, TeamStatus
from ..teams.member.review_remote import ReviewAnswer, ReviewRequest
from . import schemas as s
from .errors import ControlPlaneError, error_from_response

if TYPE_CHECKING:
    from ..teams import TeamClient

_TASKS = TypeAdapter(list[Task])
_TEAMS = TypeAdapter(list[Team])
_MESSAGES = TypeAdapter(list[TeamMessage])
#: Longest single wait request; ``wait_for_tasks`` repeats it up to its own timeout.
_WAIT_STEP = 20.0


def _seg(value: str) -> str:
    return quote(value, safe="")


class ControlPlaneTeamClient:
    """Teams of the token's (org, user) through ``agentscope-teams serve`` at ``base_url``."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._owns_http = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)
        self._headers = {"Authorization": f"Bearer {token}"}
        self.member_tokens: dict[tuple[str, str], str] = {}

    def __repr__(self) -> str:
        return f"ControlPlaneTeamClient({self.base_url!r})"

    async def aclose(self) -> None:
        """Close the HTTP client if this object created it."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        *,
        read_timeout: float | None = None,
    ) -> Any:
        url = self.base_url + path
        extra: dict[str, Any] = {} if read_timeout is None else {"timeout": read_timeout}
        try:
            headers = {**self._headers, **tracing.outgoing()}  # the server's tasks join our trace
            response = await self._http.request(
                method, url, json=body, params=params, headers=headers, **extra
            )
        except httpx.TransportError as exc:
            raise ControlPlaneError(
                f"cannot reach the control plane at {self.base_url} ({type(exc).__name__}: "
                f"{exc}); is `agentscope-teams serve` running there?"
            ) from exc
        if response.status_code == 204:
            return None
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code >= 400:
            raise error_from_response(response.status_code, data, f"{method} {path}")
        return data

    def _team(self, team_id: str) -> str:
        return "/api/teams/" + _seg(team_id)

    def _task(self, team_id: str, task_id: str) -> str:
        return f"{self._team(team_id)}/tasks/{_seg(task_id)}"

    async def whoami(self) -> s.Whoami:
        return s.Whoami.model_validate(await self._call("GET", "/api/whoami"))

    async def create_team(
        self,
        name: str,
        lead: str = "lead",
        members: Sequence[Member] = (),
        description: str = "",
        *,
        max_tokens: int | None = None,
        max_budget_usd: float | None = None,
    ) -> Team:
        fields = set(s.MemberIn.model_fields)  # a member's review records are not input
        dumped = [m.model_dump(mode="json", include=fields) for m in members]
        body: dict[str, object] = {"name": name, "lead": lead, "members": dumped}
        body |= {"description": description}
        body |= {"max_tokens": max_tokens, "max_budget_usd": max_budget_usd}
        created = s.CreatedTeam.model_validate(await self._call("POST", "/api/teams", body))
        for member, token in created.tokens.items():
            self.member_tokens[(created.team.id, member)] = token
        return created.team

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
    ) -> Member:
        given = {
            "session_id": session_id,
            "permission_mode": permission_mode,
            "plan_approval": plan_approval,
            "max_tokens": max_tokens,
            "max_budget_usd": max_budget_usd,
            "lead_mode": lead_mode,
        }
        # only the fields set: a server of the previous release (whose bodies refuse unknown
        # fields) takes a spawn that uses none of the newer ones, and refuses one that does
        chosen = {k: v for k, v in given.items() if v is not None and v is not False}
        body = {"name": name, "spec": spec, **chosen}
        data = await self._call("POST", self._team(team_id) + "/members", body)
        spawned = s.SpawnedMember.model_validate(data)
        if spawned.token is not None:  # None: the member existed; its token is unchanged
            self.member_tokens[(team_id, name)] = spawned.token
        return spawned.member

    async def issue_member_token(self, team_id: str, name: str) -> str:
        """A new token for a participant (operator only); the previous one stops working."""
        path = f"{self._team(team_id)}/members/{_seg(name)}/token"
        token = s.IssuedToken.model_validate(await self._call("POST", path)).token
        self.member_tokens[(team_id, name)] = token
        return token

    async def review_member(self, team_id: str, name: str, request: ReviewRequest) -> ReviewAnswer:
        """A change of ``name``'s plan review or refused prompts, run by the server (plan approval
        for members on this client: :mod:`agentscope_teams.teams.member.review_remote`)."""
        path = f"{self._team(team_id)}/members/{_seg(name)}/review"
        body = request.model_dump(mode="json", exclude_none=True)
        return ReviewAnswer.model_validate(await self._call("POST", path, body))

    async def get_team(self, team_id: str) -> Team:
        return Team.model_validate(await self._call("GET", self._team(team_id)))

    async def list_teams(self) -> list[Team]:
        """Every team (ended ones too), as :meth:`LocalTeamClient.list_teams` lists them."""
        return _TEAMS.validate_python(await self._call("GET", "/api/teams", params={"all": "true"}))

    async def delete_team(self, team_id: str) -> None:
        await self._call("DELETE", self._team(team_id))

    async def set_team_status(self, team_id: str, status: TeamStatus) -> Team:
        data = await self._call("PUT", self._team(team_id) + "/status", {"status": status.value})
        return Team.model_validate(data)

    async def set_member_status(self, team_id: str, name: str, status: MemberStatus) -> Member:
        path = f"{self._team(team_id)}/members/{_seg(name)}/status"
        return Member.model_validate(await self._call("PUT", path, {"status": status.value}))

    async def stop_member(self, team_id: str, name: str, reason: str, *, event: str) -> Member:
        path = f"{self._team(team_id)}/members/{_seg(name)}/status"
        body = {"status": MemberStatus.STOPPED.value, "stop_reason": reason, "stop_event": event}
        return Member.model_validate(await self._call("PUT", path, body))

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
        body = {
            "result_schema": None if result_schema is None else dict(result_schema),
            "title": title,
            "description": description,
            "assignee": assignee,
            "blocked_by": list(blocked_by),
            "max_attempts": max_attempts,
            "actor": actor,
        }
        return Task.model_validate(await self._call("POST", self._team(team_id) + "/tasks", body))

    async def claim_task(
        self,
        team_id: str,
        member: str,
        task_id: str | None = None,
        *,
        task_lease: float | None = None,
        prefer_own: bool = False,
    ) -> Task | None:
        body = {
            "member": member,
            "task_id": task_id,
            "lease_seconds": task_lease,
            "prefer_own": prefer_own,
        }
        data = await self._call("POST", self._team(team_id) + "/claim", body)
        return s.ClaimResult.model_validate(data).task

    async def _transition(self, team_id: str, task_id: str, verb: str, **body: Any) -> Task:
        path = f"{self._task(team_id, task_id)}/{verb}"
        return Task.model_validate(await self._call("POST", path, body))

    async def complete_task(
        self, team_id: str, member: str, task_id: str, result: str = "", *, data: Any = None
    ) -> Task:
        return await self._transition(
            team_id, task_id, "complete", member=member, result=result, data=data
        )

    async def fail_task(self, team_id: str, member: str, task_id: str, error: str) -> Task:
        return await self._transition(team_id, task_id, "fail", member=member, error=error)

    async def release_task(self, team_id: str, member: str, task_id: str) -> Task:
        return await self._transition(team_id, task_id, "release", member=member)

    async def renew_task_lease(
        self, team_id: str, member: str, task_id: str, *, task_lease: float | None = None
    ) -> Task:
        return await self._transition(
            team_id, task_id, "heartbeat", member=member, lease_seconds=task_lease
        )

    async def cancel_task(
        self, team_id: str, task_id: str, *, actor: str | None = None, reason: str = ""
    ) -> Task:
        return await self._transition(team_id, task_id, "cancel", actor=actor, reason=reason)

    async def get_task(self, team_id: str, task_id: str) -> Task:
        return Task.model_validate(await self._call("GET", self._task(team_id, task_id)))

    async def list_tasks(self, team_id: str, status: TaskStatus | None = None) -> list[Task]:
        params = None if status is None else {"status": status.value}
        return _TASKS.validate_python(
            await self._call("GET", self._team(team_id) + "/tasks", params=params)
        )

    async def open_board(self, team_id: str) -> list[Task]:
        return _TASKS.validate_python(await self._call("GET", self._team(team_id) + "/open"))

    async def reap_expired(self, team_id: str) -> list[Task]:
        return _TASKS.validate_python(await self._call("POST", self._team(team_id) + "/reap"))

    async def wait_for_tasks(self, team_id: str, timeout: float) -> bool:  # noqa: ASYNC109
        """Like the local client's: True once no task is open, False at the deadline."""
        deadline = anyio.current_time() + timeout
        while True:
            step = max(0.0, min(_WAIT_STEP, deadline - anyio.current_time()))
            data = await self._call(
                "POST", self._team(team_id) + "/wait", {"timeout": step}, read_timeout=step + 30.0
            )
            if s.WaitResult.model_validate(data).done:
                return True
            if anyio.current_time() >= deadline:
                return False

    async def send_message(self, team_id: str, sender: str, to: str, content: str) -> TeamMessage:
        body = {"sender": sender, "to": to, "content": content}
        data = await self._call("POST", self._team(team_id) + "/messages", body)
        return TeamMessage.model_validate(data)

    async def broadcast_message(self, team_id: str, sender: str, content: str) -> list[TeamMessage]:
        body = {"sender": sender, "content": content}
        return _MESSAGES.validate_python(
            await self._call("POST", self._team(team_id) + "/broadcast", body)
        )

    def _inbox(self, team_id: str, member: str) -> str:
        return f"{self._team(team_id)}/inbox/{_seg(member)}"

    async def read_messages(
        self, team_id: str, member: str, *, after: int = 0, limit: int = 100
    ) -> list[TeamMessage]:
        params = {"after": after, "limit": limit}
        return _MESSAGES.validate_python(
            await self._call("GET", self._inbox(team_id, member), params=params)
        )

    async def acknowledge(self, team_id: str, member: str, cursor: int) -> int:
        data = await self._call("POST", self._inbox(team_id, member) + "/ack", {"cursor": cursor})
        return s.Cursor.model_validate(data).cursor

    async def unread(self, team_id: str, member: str, *, limit: int = 100) -> list[TeamMessage]:
        path = self._inbox(team_id, member) + "/unread"
        return _MESSAGES.validate_python(await self._call("GET", path, params={"limit": limit}))


if TYPE_CHECKING:
    _conforms: type[TeamClient] = ControlPlaneTeamClient
