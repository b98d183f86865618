"""Mailbox routes, and the caller's own identity, token and event-stream tickets.

The sender of a message and the owner of an inbox are the member of the caller's token (an
operator names any participant; ``sender`` defaults to the team's lead). An inbox read while the
team is being deleted answers the 404 of the deleted team, not an inbox emptied half-way.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from ..teams import TeamMessage
from . import schemas as s
from .auth import STREAM_TICKET_SECONDS, issue_stream_ticket, revoke_token
from .routing import ERROR_RESPONSES, ApiRoute, Call, query_int, token_call

T = "/api/teams/{team_id}"
INBOX = T + "/inbox/{member}"
TokenCall = Annotated[Call, Depends(token_call)]
After = Annotated[str | None, Query(description="only messages with a greater seq")]
Limit = Annotated[str | None, Query(description="at most this many")]

router = APIRouter(route_class=ApiRoute, tags=["mailbox"], responses=ERROR_RESPONSES)


@router.post(
    T + "/messages",
    summary="Send a message to one participant",
    status_code=201,
    response_model=TeamMessage,
)
async def send(team_id: str, body: s.SendMessage, call: TokenCall) -> TeamMessage:
    sender = await call.acting(body.sender, default_lead=True)
    return await call.client.send_message(call.team_id, sender, body.to, body.content)


@router.post(
    T + "/broadcast",
    summary="Send a message to every other participant",
    status_code=201,
    response_model=list[TeamMessage],
)
async def broadcast(team_id: str, body: s.Broadcast, call: TokenCall) -> list[TeamMessage]:
    sender = await call.acting(body.sender, default_lead=True)
    return await call.client.broadcast_message(call.team_id, sender, body.content)


@router.get(INBOX, summary="Read an inbox in order", response_model=list[TeamMessage])
async def read(
    team_id: str, member: str, call: TokenCall, after: After = None, limit: Limit = None
) -> list[TeamMessage]:
    reader = await call.acting(member)
    first = query_int("after", after, 0, high=2**62)
    most = query_int("limit", limit, 100, low=1)
    messages = await call.client.read_messages(call.team_id, reader, after=first, limit=most)
    return await call.settled(messages)


@router.get(
    INBOX + "/unread",
    summary="Messages after the acknowledged cursor",
    response_model=list[TeamMessage],
)
async def unread(
    team_id: str, member: str, call: TokenCall, limit: Limit = None
) -> list[TeamMessage]:
    reader = await call.acting(member)
    most = query_int("limit", limit, 100, low=1)
    return await call.settled(await call.client.unread(call.team_id, reader, limit=most))


@router.post(INBOX + "/ack", summary="Acknowledge messages up to a seq", response_model=s.Cursor)
async def acknowledge(team_id: str, member: str, body: s.Acknowledge, call: TokenCall) -> s.Cursor:
    reader = await call.acting(member)
    return s.Cursor(cursor=await call.client.acknowledge(call.team_id, reader, body.cursor))


auth_router = APIRouter(route_class=ApiRoute, tags=["auth"], responses=ERROR_RESPONSES)


@auth_router.get("/api/whoami", summary="Who the token is", response_model=s.Whoami)
async def whoami(call: TokenCall) -> s.Whoami:
    p = call.principal
    return s.Whoami(
        kind=p.kind.value, org_id=p.org_id, user_id=p.user_id, team_id=p.team_id, member=p.member
    )


@auth_router.delete(
    "/api/tokens/current", summary="Revoke the token of this request", status_code=204
)
async def revoke(call: TokenCall) -> None:
    await revoke_token(call.store, call.principal)


@auth_router.post(
    T + "/events/ticket",
    summary="Issue a ticket for the team's event stream",
    status_code=201,
    response_model=s.IssuedToken,
    tags=["events"],
)
async def ticket(team_id: str, call: TokenCall) -> s.IssuedToken:
    team = await call.team()
    token = await issue_stream_ticket(call.principal, call.store, team.id)
    return s.IssuedToken(token=token, expires_in=STREAM_TICKET_SECONDS)
