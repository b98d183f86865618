"""Tokens: who a request is, derived only from its ``Authorization: Bearer`` token.

A token is ``"ast_" + base64url(32 random bytes)``. The server keeps only its SHA-256
(a :class:`TokenRecord` at its digest's key), so a copy of the store holds no usable token;
the token itself is shown once, when it is issued. There is no default secret and no token that is
valid before one was issued. Kinds:

* ``operator``: acts for one (org, user) - creates teams, spawns members, assigns tasks, reads
  everything of that user, and may act as any participant of that user's teams (the owner's
  authority, the same a :class:`~agentscope_teams.teams.LocalTeamClient` has).
* ``member``: one participant (a spawned member or the lead) of one team; acts only as itself in
  that team. A member token of a team that no longer exists is refused (401) and removed.
* ``stream``: a ticket valid for ``STREAM_TICKET_SECONDS`` that opens one team's event stream, for
  ``EventSource`` (which cannot send headers); refused everywhere else.

Member and stream tokens are also indexed per team and member, so deleting a team revokes them and
re-issuing a member's token revokes the previous one. Who may mint a member token for whom: the
operator for any participant of its teams (re-issuing revokes the old one); an operator or lead
only for a participant its own request just created (a new team's members, a spawn that created
the member). Re-spawning an existing member returns it without a token and revokes nothing. Key layout: :mod:`agentscope_teams.keys`
(families ``token`` and ``token-index``).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, model_validator

from ..context import RuntimeContext
from ..keys import token_digest_of, token_index_key, token_index_prefix, token_key
from ..message import utcnow
from ..state import check_schema_version
from ..store.base import BaseStore, Key
from ..teams import LocalTeamClient, UnknownTeamError
from .errors import ControlPlaneAuthError

TOKEN_SCHEMA_VERSION = 1
TOKEN_PREFIX = "ast_"
STREAM_TICKET_SECONDS = 120.0
_TOKEN_RE = re.compile(r"ast_[A-Za-z0-9_-]{43}")
#: The session id of contexts built for requests (teams are scoped to org and user only).
SERVER_SESSION = "control-plane"


class TokenKind(StrEnum):
    OPERATOR = "operator"
    MEMBER = "member"
    STREAM = "stream"


class TokenRecord(BaseModel):
    """What the store keeps about one token (never the token itself)."""

    schema_version: int = TOKEN_SCHEMA_VERSION
    kind: TokenKind
    org_id: str | None = None
    user_id: str | None = None
    team_id: str | None = None
    member: str | None = None
    label: str = ""
    created_at: datetime = Field(default_factory=utcnow)

    @model_validator(mode="before")
    @classmethod
    def _check_version(cls, data: Any) -> Any:
        return check_schema_version(data, TOKEN_SCHEMA_VERSION, "token record")


@dataclass(frozen=True, slots=True)
class Principal:
    """The identity of one request, from its token."""

    kind: TokenKind
    org_id: str | None
    user_id: str | None
    team_id: str | None
    member: str | None
    token_hash: str

    @property
    def is_operator(self) -> bool:
        return self.kind is TokenKind.OPERATOR

    def context(self) -> RuntimeContext:
        return RuntimeContext(session_id=SERVER_SESSION, user_id=self.user_id, org_id=self.org_id)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def _issue(store: BaseStore, record: TokenRecord, ttl: float | None) -> str:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    digest = hash_token(token)
    value = record.model_dump_json().encode()
    await store.put(token_key(digest), value, expected_version=0, ttl=ttl)
    if record.team_id is not None and record.member is not None:
        index = token_index_key(
            record.org_id, record.user_id, record.team_id, record.member, digest
        )
        await store.put(index, b"{}", ttl=ttl)
    return token


async def issue_operator_token(
    store: BaseStore,
    org_id: str | None,
    user_id: str | None,
    *,
    ttl: float | None = None,
    label: str = "",
) -> str:
    """A new operator token for (org, user); returned once, stored hashed."""
    ctx = RuntimeContext(session_id=SERVER_SESSION, user_id=user_id, org_id=org_id)
    record = TokenRecord(
        kind=TokenKind.OPERATOR, org_id=ctx.org_id, user_id=ctx.user_id, label=label
    )
    return await _issue(store, record, ttl)


async def issue_member_token(
    store: BaseStore, org_id: str | None, user_id: str | None, team_id: str, member: str
) -> str:
    """A new token for ``member`` of ``team_id``; the member's previous tokens are revoked.

    The operator's power (and the library's, for provisioning): the HTTP API calls it only from
    operator-only endpoints. A new participant's first token comes from :func:`first_member_token`.
    """
    await _revoke_prefix(store, token_index_prefix(org_id, user_id, team_id, member))
    return await first_member_token(store, org_id, user_id, team_id, member)


async def first_member_token(
    store: BaseStore, org_id: str | None, user_id: str | None, team_id: str, member: str
) -> str:
    """The token of a participant this request just created; revokes nothing.

    Only for a member that did not exist before (a new team's members, a spawn that created the
    member): minting for an existing participant would let its spawner act as it.
    """
    record = TokenRecord(
        kind=TokenKind.MEMBER, org_id=org_id, user_id=user_id, team_id=team_id, member=member
    )
    return await _issue(store, record, None)


async def issue_stream_ticket(principal: Principal, store: BaseStore, team_id: str) -> str:
    """A short-lived ticket that opens ``team_id``'s event stream as ``principal``."""
    record = TokenRecord(
        kind=TokenKind.STREAM,
        org_id=principal.org_id,
        user_id=principal.user_id,
        team_id=team_id,
        member=principal.member,
        label="operator" if principal.is_operator else "member",
    )
    return await _issue(store, record, STREAM_TICKET_SECONDS)


async def _revoke_prefix(store: BaseStore, prefix: Key) -> int:
    count = 0
    while page := await store.list_keys(prefix, limit=500):
        for key in page:
            await store.delete(token_key(token_digest_of(key)))
            await store.delete(key)
            count += 1
    return count


async def revoke_team_tokens(
    store: BaseStore, org_id: str | None, user_id: str | None, team_id: str
) -> int:
    """Revoke every member token and stream ticket of a team; returns how many."""
    return await _revoke_prefix(store, token_index_prefix(org_id, user_id, team_id))


async def revoke_token(store: BaseStore, principal: Principal) -> None:
    await store.delete(token_key(principal.token_hash))
    if principal.team_id is not None and principal.member is not None:
        index = token_index_key(
            principal.org_id,
            principal.user_id,
            principal.team_id,
            principal.member,
            principal.token_hash,
        )
        await store.delete(index)


def bearer_token(header: str | None) -> str:
    """The token of an ``Authorization`` header; 401 when there is none."""
    if not header:
        raise ControlPlaneAuthError(
            "missing Authorization header; send 'Authorization: Bearer <token>' with a token "
            "printed by `agentscope-teams serve` or returned when a member was spawned",
            401,
        )
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ControlPlaneAuthError("the Authorization header must be 'Bearer <token>'", 401)
    return token.strip()


async def authenticate(store: BaseStore, token: str, *, stream: bool = False) -> Principal:
    """The principal of ``token``; 401 when it is malformed, unknown, revoked or expired.

    ``stream`` tickets are accepted only when ``stream`` is True (the event stream endpoint).
    """
    unknown = ControlPlaneAuthError("unknown, revoked or expired token", 401)
    if not _TOKEN_RE.fullmatch(token):
        raise unknown
    digest = hash_token(token)
    entry = await store.get(token_key(digest))
    if entry is None:
        raise unknown
    record = TokenRecord.model_validate_json(entry.value)
    if record.kind is TokenKind.STREAM and not stream:
        raise ControlPlaneAuthError("a stream ticket only opens an event stream", 401)
    principal = Principal(
        record.kind, record.org_id, record.user_id, record.team_id, record.member, digest
    )
    if record.team_id is not None and record.member is not None:
        await _check_team_alive(store, principal)
    return principal


async def _check_team_alive(store: BaseStore, principal: Principal) -> None:
    """A member token outlives its team only as garbage: refuse it and remove it."""
    assert principal.team_id is not None and principal.member is not None
    client = LocalTeamClient(store, principal.context())
    try:
        team = await client.get_team(principal.team_id)
    except UnknownTeamError:
        team = None
    if team is None or principal.member not in team.participants():
        await revoke_token(store, principal)
        raise ControlPlaneAuthError(
            f"this token belonged to member {principal.member!r} of team "
            f"{principal.team_id!r}, which no longer exists; the token was revoked",
            401,
        )
