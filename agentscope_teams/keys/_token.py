"""Keys of control-plane tokens: the hashed token records and the per-team revocation index."""

from __future__ import annotations

from ..context import org_segment, user_segment
from ..store.base import Key
from ._family import TOKEN, TOKEN_INDEX, parse_as


def token_key(digest: str) -> Key:
    """The record of the token whose SHA-256 hex digest is ``digest``."""
    return TOKEN.key(digest)


def token_index_prefix(
    org_id: str | None, user_id: str | None, team_id: str, member: str | None = None
) -> Key:
    """The index of a team's member and stream tokens (of one member when ``member`` is given)."""
    values = [org_segment(org_id), user_segment(user_id), team_id]
    if member is not None:
        values.append(member)
    return TOKEN_INDEX.prefix(*values)


def token_index_key(
    org_id: str | None, user_id: str | None, team_id: str, member: str, digest: str
) -> Key:
    """The index entry of one member or stream token."""
    return TOKEN_INDEX.key(org_segment(org_id), user_segment(user_id), team_id, member, digest)


def token_digest_of(index_key: Key) -> str:
    """The token digest of an index entry; ``ValueError`` for any other key."""
    return parse_as(TOKEN_INDEX, index_key)["digest"]
