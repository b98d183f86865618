"""Keys of subagent runs: records, leases, the parent's notice inbox and each run's mail."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..context import RuntimeContext, org_segment, user_segment
from ..store.base import Key
from ._family import (
    RUN,
    RUN_INBOX,
    RUN_INBOX_ACK,
    RUN_LEASE,
    RUN_MAIL,
    RUN_MAIL_ACK,
    parse_as,
    typed,
    untyped,
)


class StreamKeys(NamedTuple):
    """A store stream and the key of its acknowledged cursor."""

    stream: Key
    cursor: Key


@dataclass(frozen=True, slots=True)
class RunKeys:
    """Every key of the runs of one parent session; ``scope`` is its typed (org, user, session)."""

    scope: tuple[str, str, str]

    @classmethod
    def for_ctx(cls, ctx: RuntimeContext) -> RunKeys:
        return cls(ctx.scope())

    @classmethod
    def parse(cls, key: Key) -> tuple[RunKeys, str]:
        """The run keys and run id of a run record key; ``ValueError`` for any other key."""
        found = parse_as(RUN, key)
        return cls((found["org"], found["user"], found["session"])), found["run"]

    @property
    def session_id(self) -> str:
        """The parent session's id."""
        return untyped(self.scope[2], "session") or ""

    def prefix(self) -> Key:
        """The prefix of every run record of the session."""
        return RUN.prefix(*self.scope)

    def run(self, run_id: str) -> Key:
        return RUN.key(*self.scope, run_id)

    def lease(self, run_id: str) -> Key:
        return RUN_LEASE.key(*self.scope, run_id)

    def inbox(self, parent_agent: str) -> StreamKeys:
        """The parent agent's notice inbox in this session."""
        org, user, session = self.scope
        segments = (org, user, typed("agent", parent_agent), session)
        return StreamKeys(RUN_INBOX.key(*segments), RUN_INBOX_ACK.key(*segments))

    def mail(self, run_id: str) -> StreamKeys:
        """Messages queued for a running child (``agent_send``)."""
        return StreamKeys(RUN_MAIL.key(*self.scope, run_id), RUN_MAIL_ACK.key(*self.scope, run_id))


def user_runs_prefix(org_id: str | None, user_id: str | None) -> Key:
    """The prefix of every run record of a user, across sessions."""
    return RUN.prefix(org_segment(org_id), user_segment(user_id))
