"""Mailbox routes, and the caller's own identity, token and event-stream tickets.

The sender of a message and the owner of an inbox are the member of the caller's token (an
operator names any participant; ``sender`` defaults to the team's lead). An inbox read while the
team is being deleted answers the 404 of the deleted team, not an inbox emptied half-way.
"""

from __future__ import annotations

from typing import Any

from ..teams import TeamMessage
from . import schemas as s
from .auth import STREAM_TICKET_SECONDS, issue_stream_ticket, revoke_token
from .routing import Call, Endpoint

T = "/api/teams/{team_id}"
INBOX = T + "/inbox/{member}"


async def send(call: Call) -> TeamMessage:
    body = await call.body(s.SendMessage)
    sender = await call.acting(body.sender, default_lead=True)
    return await call.client.send_message(call.team_id, sender, body.to, body.content)


async def broadcast(call: Call) -> list[TeamMessage]:
    body = await call.body(s.Broadcast)
    sender = await call.acting(body.sender, default_lead=True)
    return await call.client.broadcast_message(call.team_id, sender, body.content)


async def read(call: Call) -> list[TeamMessage]:
    member = await call.acting(call.path("member"))
    after = call.query_int("after", 0, high=2**62)
    limit = call.query_int("limit", 100, low=1)
    messages = await call.client.read_messages(call.team_id, member, after=after, limit=limit)
    return await call.settled(messages)


async def unread(call: Call) -> list[TeamMessage]:
    member = await call.acting(call.path("member"))
    limit = call.query_int("limit", 100, low=1)
    return await call.settled(await call.client.unread(call.team_id, member, limit=limit))


async def acknowledge(call: Call) -> s.Cursor:
    body = await call.body(s.Acknowledge)
    member = await call.acting(call.path("member"))
    return s.Cursor(cursor=await call.client.acknowledge(call.team_id, member, body.cursor))


async def whoami(call: Call) -> s.Whoami:
    p = call.principal
    return s.Whoami(
        kind=p.kind.value, org_id=p.org_id, user_id=p.user_id, team_id=p.team_id, member=p.member
    )


async def revoke(call: Call) -> None:
    await revoke_token(call.store, call.principal)


async def ticket(call: Call) -> s.IssuedToken:
    team = await call.team()
    token = await issue_stream_ticket(call.principal, call.store, team.id)
    return s.IssuedToken(token=token, expires_in=STREAM_TICKET_SECONDS)


def _ep(method: str, path: str, handler: Any, summary: str, **kw: Any) -> Endpoint:
    return Endpoint(method, path, handler, summary, tag="mailbox", **kw)


ENDPOINTS = [
    _ep(
        "POST",
        T + "/messages",
        send,
        "Send a message to one participant",
        body=s.SendMessage,
        response=TeamMessage,
        status=201,
    ),
    _ep(
        "POST",
        T + "/broadcast",
        broadcast,
        "Send a message to every other participant",
        body=s.Broadcast,
        response=TeamMessage,
        many=True,
        status=201,
    ),
    _ep(
        "GET",
        INBOX,
        read,
        "Read an inbox in order",
        response=TeamMessage,
        many=True,
        query=(("after", "only messages with a greater seq"), ("limit", "at most this many")),
    ),
    _ep(
        "GET",
        INBOX + "/unread",
        unread,
        "Messages after the acknowledged cursor",
        response=TeamMessage,
        many=True,
        query=(("limit", "at most this many"),),
    ),
    _ep(
        "POST",
        INBOX + "/ack",
        acknowledge,
        "Acknowledge messages up to a seq",
        body=s.Acknowledge,
        response=s.Cursor,
    ),
    Endpoint("GET", "/api/whoami", whoami, "Who the token is", response=s.Whoami, tag="auth"),
    Endpoint(
        "DELETE",
        "/api/tokens/current",
        revoke,
        "Revoke the token of this request",
        status=204,
        tag="auth",
    ),
    Endpoint(
        "POST",
        T + "/events/ticket",
        ticket,
        "Issue a ticket for the team's event stream",
        response=s.IssuedToken,
        status=201,
        tag="events",
    ),
]
