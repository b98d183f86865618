"""``GET /api/teams/{team_id}/events``: a server-sent-events stream of one team, by polling the store.

Each poll reads the team record (member status, team status), the task board (a task is sent again
when its store version or its computed ``blocked_reason`` changed) and the inboxes the caller may
read (every inbox for an operator, its own for a member token) after the last seq sent. A new
connection first receives the current state, so a client that reconnects simply upserts by id::

    event: team      data: Team          (on connect and when the team's status changes)
    event: member    data: {"team_id", "member": Member}
    event: task      data: Task          (with history, owner, blockers, blocked_reason)
    event: message   data: TeamMessage   (seq is per recipient inbox)
    event: team      data: {"id", "status": "deleted"}   then the stream ends
    event: error     data: {"type", "message", ...}      a store error; then the stream ends
    : ping                               (a comment every heartbeat interval)

A team the caller cannot see (another org's or user's, an unknown id, a deleted team) answers 404
before the stream opens, by the same check as every other per-team route
(:meth:`~.routing.Call.team`): "deleted" is only ever said of a team the stream was following.

``EventSource`` cannot send headers: it passes a ticket from ``POST .../events/ticket`` as
``?ticket=``; other clients send their token as ``Authorization: Bearer``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ..errors import AgentScopeTeamsError
from ..teams import LocalTeamClient, MemberStatus, Team, TeamStatus, UnknownTeamError
from .auth import Principal, authenticate
from .errors import ControlPlaneAuthError, error_body
from .routing import Call, Settings, error_response, principal_of

PATH = "/api/teams/{team_id}/events"
_INBOX_PAGE = 200


def frame(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


class TeamWatcher:
    """What one stream has already sent; :meth:`poll` returns the frames of what changed."""

    def __init__(self, client: LocalTeamClient, team_id: str, inbox_of: str | None) -> None:
        self.client, self.team_id, self.inbox_of = client, team_id, inbox_of
        self.team_status: TeamStatus | None = None
        self.members: dict[str, MemberStatus] = {}
        self.tasks: dict[str, tuple[int, str | None]] = {}
        self.cursors: dict[str, int] = {}

    async def poll(self) -> tuple[list[str], bool]:
        """(frames, gone): ``gone`` once the team no longer exists."""
        try:
            team = await self.client.get_team(self.team_id)
        except UnknownTeamError:
            return [frame("team", {"id": self.team_id, "status": TeamStatus.DELETED.value})], True
        frames = self._team_frames(team)
        for task in await self.client.list_tasks(self.team_id):
            mark = (task.version, task.blocked_reason)
            if self.tasks.get(task.id) != mark:
                self.tasks[task.id] = mark
                frames.append(frame("task", task.model_dump(mode="json")))
        readers = team.participants() if self.inbox_of is None else [self.inbox_of]
        for name in readers:
            frames += await self._inbox_frames(name)
        return frames, False

    def _team_frames(self, team: Team) -> list[str]:
        frames = []
        if team.status is not self.team_status:
            self.team_status = team.status
            frames.append(frame("team", team.model_dump(mode="json")))
        for m in team.members:
            if self.members.get(m.name) is not m.status:
                self.members[m.name] = m.status
                data = {"team_id": team.id, "member": m.model_dump(mode="json")}
                frames.append(frame("member", data))
        return frames

    async def _inbox_frames(self, name: str) -> list[str]:
        frames = []
        while True:
            after = self.cursors.get(name, 0)
            page = await self.client.read_messages(
                self.team_id, name, after=after, limit=_INBOX_PAGE
            )
            for msg in page:
                frames.append(frame("message", msg.model_dump(mode="json")))
                self.cursors[name] = msg.seq
            if len(page) < _INBOX_PAGE:
                return frames


async def _principal(request: Request) -> Principal:
    ticket = request.query_params.get("ticket")
    if ticket is None:
        return await principal_of(request, stream=True)
    principal = await authenticate(request.app.state.store, ticket, stream=True)
    if principal.team_id != request.path_params["team_id"]:
        raise ControlPlaneAuthError("this ticket opens another team's event stream", 403)
    return principal


async def team_events(request: Request) -> Response:
    settings: Settings = request.app.state.settings
    try:
        principal = await _principal(request)
        call = Call(request, principal, request.app.state.store, settings)
        team = await call.team()
        watcher = TeamWatcher(call.client, team.id, principal.member)
        first, gone = await watcher.poll()
    except Exception as exc:
        return error_response(exc)

    async def stream() -> AsyncIterator[str]:
        frames, done = first, gone
        idle = 0.0
        while True:
            for f in frames:
                yield f
            if done or request.app.state.closing:
                return
            if idle >= settings.heartbeat_seconds:
                idle = 0.0
                yield ": ping\n\n"
            await anyio.sleep(settings.poll_interval)
            idle += settings.poll_interval
            try:
                frames, done = await watcher.poll()
            except AgentScopeTeamsError as exc:  # e.g. the store went away: say so, then end
                frames, done = [frame("error", error_body(exc)["error"])], True
            if frames:
                idle = 0.0

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)


ROUTES = [Route(PATH, team_events, methods=["GET"])]
