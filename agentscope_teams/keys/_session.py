"""The address of one session: its ids, its record key and its lease key, computed once."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..context import RuntimeContext, org_segment, user_segment
from ..store.base import Key
from ._family import SESSION, SESSION_LEASE, parse_as, typed, untyped


@dataclass(frozen=True, slots=True)
class SessionAddress:
    """Which session: (org, user, agent, session). Ids are validated once, when it is built.

    ``key`` is the session record's key and ``lease_key`` the key of the lease a process holds
    while it runs a call of the session; both are computed at construction.
    """

    org_id: str | None
    user_id: str | None
    agent_id: str
    session_id: str
    key: Key = field(init=False, repr=False, compare=False)
    lease_key: Key = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        segments = (
            org_segment(self.org_id),
            user_segment(self.user_id),
            typed("agent", self.agent_id),
            typed("session", self.session_id),
        )
        object.__setattr__(self, "key", SESSION.key(*segments))
        object.__setattr__(self, "lease_key", SESSION_LEASE.key(*segments))

    @classmethod
    def of(cls, ctx: RuntimeContext, agent_id: str) -> SessionAddress:
        """The session of ``agent_id`` that ``ctx`` addresses."""
        return cls(ctx.org_id, ctx.user_id, agent_id, ctx.session_id)

    @classmethod
    def parse(cls, key: Key) -> SessionAddress:
        """The address of a session record key; ``ValueError`` for any other key."""
        found = parse_as(SESSION, key)
        agent, session = untyped(found["agent"], "agent"), untyped(found["session"], "session")
        assert agent is not None and session is not None  # the family requires non-empty ids
        return cls(untyped(found["org"], "org"), untyped(found["user"], "user"), agent, session)


def sessions_prefix(org_id: str | None, user_id: str | None, agent_id: str | None = None) -> Key:
    """The prefix of every session of a user (of one of its agents when ``agent_id`` is given)."""
    values = [org_segment(org_id), user_segment(user_id)]
    if agent_id is not None:
        values.append(typed("agent", agent_id))
    return SESSION.prefix(*values)
