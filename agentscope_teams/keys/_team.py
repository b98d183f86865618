"""Keys of Agent Teams: the per-user registry, every key and stream of one team, the directory."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from ..context import RuntimeContext, org_segment
from ..store.base import Key
from ._family import (
    DIRECTORY_SIGNAL,
    EVENT_LOG,
    EXPIRY_WIDTH,
    HELD_TASK,
    INBOX_CURSOR,
    MEMBER_INBOX,
    MEMBER_LEASE,
    OWNED_TASK,
    PARKED_RUNTIME,
    PENDING_TASK,
    SEQ_WIDTH,
    TASK,
    TASK_SEQ,
    TEAM,
    TEAM_INDEX,
    TEAM_RUNTIME,
    TEAM_SIGNAL,
    family_of,
    parse_as,
)


class Numbered(Protocol):
    """What the open index needs of a task: its id and its sequence number."""

    @property
    def id(self) -> str: ...

    @property
    def seq(self) -> int: ...


@dataclass(frozen=True, slots=True)
class TeamKeys:
    """Every key and stream of one team in one owner scope (typed org and user segments)."""

    scope: tuple[str, str]
    team_id: str

    @property
    def base(self) -> Key:
        """The prefix of every key of the team (its group)."""
        return self.team()[: TEAM.group]

    def team(self) -> Key:
        return TEAM.key(*self.scope, self.team_id)

    def index(self) -> Key:
        """The team's entry in its owner's registry (grouped per user, not per team)."""
        return team_index_key(self.scope, self.team_id)

    def task(self, task_id: str) -> Key:
        return TASK.key(*self.scope, self.team_id, task_id)

    def tasks_prefix(self) -> Key:
        return TASK.prefix(*self.scope, self.team_id)

    def open_prefix(self) -> Key:
        """The pending index (claim candidates, oldest first; named "open" in older boards)."""
        return PENDING_TASK.prefix(*self.scope, self.team_id)

    def open(self, task: Numbered) -> Key:
        """``task``'s pending-index entry."""
        return PENDING_TASK.key(*self.scope, self.team_id, f"{task.seq:0{SEQ_WIDTH}d}", task.id)

    def held_prefix(self) -> Key:
        """The in-progress index, earliest lease expiry first."""
        return HELD_TASK.prefix(*self.scope, self.team_id)

    def held(self, task_id: str, expires: datetime) -> Key:
        """An in-progress-index entry of ``task_id`` recording the lease expiry ``expires``."""
        ms = int(expires.timestamp() * 1000)  # floored: never later than the real expiry
        return HELD_TASK.key(*self.scope, self.team_id, f"{ms:0{EXPIRY_WIDTH}d}", task_id)

    def expiry_of(self, held: Key) -> datetime:
        """The lease expiry an in-progress-index entry records."""
        ms = int(parse_as(HELD_TASK, held)["expiry"])
        return datetime.fromtimestamp(ms / 1000, UTC)

    def owned_prefix(self, member: str) -> Key:
        """``member``'s in-progress tasks, oldest first."""
        return OWNED_TASK.prefix(*self.scope, self.team_id, member)

    def owned(self, member: str, task: Numbered) -> Key:
        return OWNED_TASK.key(
            *self.scope, self.team_id, member, f"{task.seq:0{SEQ_WIDTH}d}", task.id
        )

    def task_seq(self) -> Key:
        return TASK_SEQ.key(*self.scope, self.team_id)

    def inbox(self, member: str) -> Key:
        return MEMBER_INBOX.key(*self.scope, self.team_id, member)

    def cursor(self, member: str) -> Key:
        return INBOX_CURSOR.key(*self.scope, self.team_id, member)

    def event_log(self, stream: str, chunk: int) -> Key:
        """Chunk ``chunk`` of the log of what event stream ``stream`` sent (the server's resume)."""
        return EVENT_LOG.key(*self.scope, self.team_id, stream, f"{chunk:0{SEQ_WIDTH}d}")

    def member_lease(self, member: str) -> Key:
        """The lease of the process running ``member`` (at most one process runs a member)."""
        return MEMBER_LEASE.key(*self.scope, self.team_id, member)

    def signal(self) -> Key:
        """The team's wake-up channel: signalled after board and mailbox writes."""
        return TEAM_SIGNAL.key(*self.scope, self.team_id)

    def directory(self) -> Key:
        """The team's directory record (how workers serve it)."""
        return TEAM_RUNTIME.key(*self.scope, self.team_id)

    def parked_directory(self) -> Key:
        """Where the directory record of a team that ended waits until it is active again (under
        the team's prefix: deleting the team removes it)."""
        return PARKED_RUNTIME.key(*self.scope, self.team_id)

    def task_id_of(self, key: Key) -> str:
        """The task id of one of this team's task or task-index keys; ``ValueError`` otherwise."""
        family = family_of(key)
        indexes = (TASK, PENDING_TASK, HELD_TASK, OWNED_TASK)
        if family not in indexes or key[1:4] != (*self.scope, self.team_id):
            raise ValueError(f"{key!r} is not a task or task-index key of team {self.team_id!r}")
        return key[-1]


def team_index_key(scope: tuple[str, str], team_id: str) -> Key:
    """The registry entry of ``team_id`` in its owner's registry."""
    return TEAM_INDEX.key(*scope, team_id)


def team_index_prefix(scope: tuple[str, str]) -> Key:
    """The prefix of an owner's registry (every team it created)."""
    return TEAM_INDEX.prefix(*scope)


def team_id_of(index_key: Key) -> str:
    """The team id of a registry entry key; ``ValueError`` for any other key."""
    return parse_as(TEAM_INDEX, index_key)["team"]


def directory_key(ctx: RuntimeContext, team_id: str) -> Key:
    """The directory record of a team owned by ``ctx``'s (org, user)."""
    return TeamKeys(ctx.owner_scope(), team_id).directory()


def directory_prefix(org_id: str | None = None, *, any_org: bool = True) -> Key:
    """The prefix of every directory record (``any_org``), else of ``org_id`` (None: no org)."""
    return TEAM_RUNTIME.prefix() if any_org else TEAM_RUNTIME.prefix(org_segment(org_id))


def directory_signal() -> Key:
    """The store-wide channel signalled when a team's directory record is written (workers)."""
    return DIRECTORY_SIGNAL.key()
