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

The team's DELETE may land between the reads of one poll (team record, tasks, inboxes): a read
that fails then, or the next poll, reads the team again and ends the stream with the ``deleted``
event after every event found before the delete, each sent once (:meth:`TeamWatcher.poll`).

A team the caller cannot see (another org's or user's, an unknown id, a deleted team) answers 404
before the stream opens, by the same check as every other per-team route
(:meth:`~.routing.Call.team`): "deleted" is only ever said of a team the stream was following.

``EventSource`` cannot send headers: it passes a ticket from ``POST .../events/ticket`` as
``?ticket=``; other clients send their token as ``Authorization: Bearer``.

Resuming (served by sse-starlette): every event but ``deleted`` and ``error`` has an ``id`` of at
most 49 characters, ``<stream>.<n>`` (:mod:`.stream_log`), whose meaning (what the stream had sent
up to and including it) the stream wrote to the store before sending it. A client that reconnects
with ``Last-Event-ID`` (the header ``EventSource`` sends on its own reconnects, or the
``last_event_id`` query parameter for a client that opens a new stream with a new ticket) gets
exactly what changed after that event: nothing is lost and nothing is sent twice, whichever server
process answers, for at least ``resume_seconds`` after the event. An id that is too long or not of
that form answers 400 (:class:`~agentscope_teams.errors.EventIdError`); one whose log this team
does not have (another team's, or expired) starts from the current state.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response

from ..errors import AgentScopeTeamsError
from ..keys import TeamKeys
from ..teams import LocalTeamClient, Member, Team, TeamStatus, UnknownTeamError
from .auth import Principal, authenticate
from .errors import ControlPlaneAuthError, error_body
from .routing import Call, Settings, error_response, head_request, principal_of
from .stream_log import MAX_EVENT_ID, Mark, StreamCursor, StreamLog, parse_event_id, restore

PATH = "/api/teams/{team_id}/events"
_INBOX_PAGE = 200


def _digest(text: str | None) -> str:
    return hashlib.blake2s((text or "").encode(), digest_size=4).hexdigest()


def _member_mark(member: Member) -> str:
    """What a member event shows: its status, and its plan review and refused prompt when it has
    them (a plan waiting for the lead, a call refused for want of an approver)."""
    plan, prompt = member.plan, member.permission_prompt
    if plan is None and prompt is None:
        return member.status.value
    review = f"{plan.status}@{plan.at.isoformat()}" if plan is not None else ""
    review += f"|{prompt.tool}@{prompt.at.isoformat()}" if prompt is not None else ""
    return f"{member.status.value}:{_digest(review)}"


class TeamWatcher:
    """Where one stream is; :meth:`poll` returns the events of what changed, each with its id."""

    def __init__(
        self,
        client: LocalTeamClient,
        team_id: str,
        inbox_of: str | None,
        log: StreamLog,
        cursor: StreamCursor | None = None,
    ) -> None:
        self.client, self.team_id, self.inbox_of, self.log = client, team_id, inbox_of, log
        self.cursor = cursor or StreamCursor()
        self._found: list[tuple[str, str, Mark | None]] = []

    def _emit(self, event: str, data: Any, mark: Mark | None) -> None:
        if mark is not None:
            self.cursor.apply(mark)
        self._found.append((event, json.dumps(data, separators=(",", ":")), mark))

    async def poll(self) -> tuple[list[ServerSentEvent], bool]:
        """(events, gone): ``gone`` once the team no longer exists.

        The team's DELETE may land between the reads of one poll (the team record, then its
        tasks, then its inboxes). A later read that fails then is not an error: the team is read
        again, and when it is gone the poll ends with what it had found before and the
        ``deleted`` event. A read that failed for another reason is raised as is. The events of
        a poll get their ids once their marks are in the stream's log (:meth:`StreamLog.record`).
        """
        self._found = []
        self.log.rotate_if_due(self.cursor)
        try:
            team = await self.client.get_team(self.team_id)
        except UnknownTeamError:
            return self._deleted()
        try:
            await self._changes(team)
        except AgentScopeTeamsError:
            if not await self.client.is_deleted(self.team_id):
                raise
            return self._deleted()
        marks = [mark for _, _, mark in self._found if mark is not None]
        ids = iter(await self.log.record(marks) if marks else [])
        return [
            ServerSentEvent(data, event=name, id=next(ids)) for name, data, _ in self._found
        ], False

    def _deleted(self) -> tuple[list[ServerSentEvent], bool]:
        """What was found, then ``deleted``; no ids: the stream ends and a resume answers 404."""
        self._emit("team", {"id": self.team_id, "status": TeamStatus.DELETED.value}, None)
        return [ServerSentEvent(data, event=name) for name, data, _ in self._found], True

    async def _changes(self, team: Team) -> None:
        self._team_events(team)
        for task in await self.client.list_tasks(self.team_id):
            mark = (task.version, _digest(task.blocked_reason))
            if self.cursor.tasks.get(task.id) != mark:
                self._emit("task", task.model_dump(mode="json"), ("t", task.id, list(mark)))
        readers = team.participants() if self.inbox_of is None else [self.inbox_of]
        for name in readers:
            await self._inbox_events(name)

    def _team_events(self, team: Team) -> None:
        if team.status.value != self.cursor.status:
            self._emit("team", team.model_dump(mode="json"), ("s", "", team.status.value))
        for m in team.members:
            mark = _member_mark(m)
            if self.cursor.members.get(m.name) != mark:
                data = {"team_id": team.id, "member": m.model_dump(mode="json")}
                self._emit("member", data, ("m", m.name, mark))

    async def _inbox_events(self, name: str) -> None:
        while True:
            after = self.cursor.inboxes.get(name, 0)
            page = await self.client.read_messages(
                self.team_id, name, after=after, limit=_INBOX_PAGE
            )
            for msg in page:
                self._emit("message", msg.model_dump(mode="json"), ("i", name, msg.seq))
            if len(page) < _INBOX_PAGE:
                return


def error_event(exc: AgentScopeTeamsError) -> ServerSentEvent:
    """An ``error`` event (no id: a client resuming after it starts where it stood before)."""
    return ServerSentEvent(json.dumps(error_body(exc)["error"]), event="error")


async def _principal(request: Request) -> Principal:
    ticket = request.query_params.get("ticket")
    if ticket is None:
        return await principal_of(request, stream=True)
    principal = await authenticate(request.app.state.store, ticket, stream=True)
    if principal.team_id != request.path_params["team_id"]:
        raise ControlPlaneAuthError("this ticket opens another team's event stream", 403)
    return principal


def last_event_id(request: Request) -> str | None:
    """The id to resume after: the ``Last-Event-ID`` header, else ``?last_event_id=``."""
    return request.headers.get("last-event-id") or request.query_params.get("last_event_id")


async def team_events(request: Request) -> Response:
    settings: Settings = request.app.state.settings
    try:
        principal = await _principal(request)
        call = Call(request, principal, request.app.state.store, settings)
        resume = parse_event_id(last_event_id(request))  # a 400 before the team is read
        team = await call.team()
        if head_request(request):  # the stream's headers; nothing polled, no stream opened
            return _response(_no_events(), settings)
        keys = TeamKeys(principal.context().owner_scope(), team.id)
        cursor = None if resume is None else await restore(call.store, keys, resume)
        cursor = cursor or StreamCursor()
        log = StreamLog(call.store, keys, settings.resume_seconds, cursor)
        watcher = TeamWatcher(call.client, team.id, principal.member, log, cursor)
        first, gone = await watcher.poll()
    except Exception as exc:
        return error_response(exc)

    async def stream() -> AsyncIterator[ServerSentEvent]:
        events, done = first, gone
        while True:
            for event in events:
                yield event
            if done or request.app.state.closing:
                return
            await anyio.sleep(settings.poll_interval)
            try:
                events, done = await watcher.poll()
            except AgentScopeTeamsError as exc:  # e.g. the store went away: say so, then end
                events, done = [error_event(exc)], True

    return _response(stream(), settings)


def _response(events: AsyncIterator[ServerSentEvent], settings: Settings) -> Response:
    """The stream of ``events`` (to a ``HEAD``, sse-starlette sends the headers only)."""
    return EventSourceResponse(
        events,
        ping=settings.heartbeat_seconds,
        sep="\n",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _no_events() -> AsyncIterator[ServerSentEvent]:
    return
    yield  # an async generator that yields nothing


#: The OpenAPI operation of the stream (its parameters are read by :func:`team_events` itself).
OPERATION: dict[str, Any] = {
    "summary": "Server-sent events of a team (task, message, member, team)",
    "operation_id": "events_team_events",
    "tags": ["events"],
    "response_class": EventSourceResponse,
    "response_model": None,
    "responses": {
        200: {
            "description": "An endless text/event-stream",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        400: {"description": "A Last-Event-ID this server never sent (EventIdError)"},
        401: {"description": "No token, or an unknown, revoked or expired one"},
        403: {"description": "The token or ticket may not open this team's stream"},
        404: {"description": "Unknown team"},
    },
    "openapi_extra": {
        "parameters": [
            {"name": "team_id", "in": "path", "required": True, "schema": {"type": "string"}},
            {
                "name": "ticket",
                "in": "query",
                "required": False,
                "schema": {"type": "string"},
                "description": "a ticket from POST .../events/ticket (for EventSource)",
            },
            {
                "name": "last_event_id",
                "in": "query",
                "required": False,
                "schema": {"type": "string", "maxLength": MAX_EVENT_ID},
                "description": "resume after this event (as the Last-Event-ID header does)",
            },
        ]
    },
}
