"""Session records: what is persisted (:class:`SessionBody`) and what a load returns (:class:`SessionRecord`).

Schema version 2 added ``origin``, ``team_id`` and ``config_version``; version-1 records load with
their origin taken from ``source``, no team and config version 1. A segmented record (Redis,
:mod:`.segments`) stores a :class:`SegmentedHead` (head version 3) whose body has an empty context;
the context is in segments beside it. Versions before it refuse the head with "upgrade" instead of
reading a session without its history. A deleted session leaves a :data:`TOMBSTONE`.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, model_validator

from ..message import utcnow
from ..state import STATE_SCHEMA_VERSION, AgentState, check_schema_version
from .config import SessionConfig, copy_config
from .origins import ChannelOrigin, ScheduleOrigin, SessionOrigin, SessionSource, origin_of

SESSION_SCHEMA_VERSION = 2


class SessionBody(BaseModel):
    """What is persisted; the version lives in the store, not in the body."""

    schema_version: int = SESSION_SCHEMA_VERSION
    config: SessionConfig
    state: AgentState
    source: SessionSource = SessionSource.USER
    origin: SessionOrigin | None = None
    team_id: str | None = None
    #: 1 at creation, +1 each time ``upsert_session`` replaces the config with a different one.
    config_version: int = 1
    created_at: datetime
    updated_at: datetime

    @model_validator(mode="after")
    def _check_version(self) -> SessionBody:  # after, not before: keeps pydantic's fast JSON path
        check_schema_version(
            {"schema_version": self.schema_version}, SESSION_SCHEMA_VERSION, "session record"
        )
        return self

    def origin_or_source(self) -> SessionOrigin:
        """The stored origin; for a version-1 record, the plain origin of its source."""
        return self.origin if self.origin is not None else origin_of(source=self.source)


HEAD_SCHEMA_VERSION = 3
#: How a segmented head's bytes start (its first field), which a whole-value record never does.
HEAD_MARK = b'{"segments":'


class SegmentedHead(BaseModel):
    """The value of a segmented record: the context's layout and the body without its context."""

    #: (segment id, message count) per segment, in context order.
    segments: list[tuple[str, int]]
    schema_version: int = HEAD_SCHEMA_VERSION
    body: SessionBody

    @model_validator(mode="after")
    def _check_version(self) -> SegmentedHead:
        check_schema_version(
            {"schema_version": self.schema_version}, HEAD_SCHEMA_VERSION, "session record"
        )
        return self


#: The value a deleted session leaves at its key (:meth:`~.storage.SessionStorage.delete_at`): the
#: key's version goes on from it, so a session created again never reaches a version the deleted
#: one had (store versions restart at 1 for an absent key). Its ``schema_version``, newer than a
#: body's, makes a release that predates tombstones say "upgrade" instead of misreading it.
TOMBSTONE = b'{"deleted":true,"schema_version":3}'
EMPTY_STATE = AgentState()
VERSIONED_PARTS = {
    None: (SESSION_SCHEMA_VERSION, "session record"),
    "state": (STATE_SCHEMA_VERSION, "AgentState"),
}
HEAD_VERSIONED_PARTS = {
    None: (HEAD_SCHEMA_VERSION, "session record"),
    "body": (SESSION_SCHEMA_VERSION, "session record"),
}


class SessionRecord(BaseModel):
    """A session as loaded: addressing ids, config, state, store version, origin and timestamps.

    ``id`` is AgentScope's name for ``session_id``; ``source_schedule_id`` (and the channel ids)
    read the origin as AgentScope's deprecated flat properties do.
    """

    org_id: str | None
    user_id: str | None
    agent_id: str
    session_id: str
    config: SessionConfig
    state: AgentState
    version: int
    source: SessionSource
    origin: SessionOrigin
    team_id: str | None = None
    config_version: int = 1
    created_at: datetime
    updated_at: datetime

    @property
    def id(self) -> str:
        """The session id (AgentScope's name for it)."""
        return self.session_id

    @property
    def source_schedule_id(self) -> str | None:
        """The schedule that opened the session, if one did."""
        return self.origin.schedule_id if isinstance(self.origin, ScheduleOrigin) else None

    @property
    def source_channel_id(self) -> str | None:
        """The channel that opened the session, if one did."""
        return self.origin.channel_id if isinstance(self.origin, ChannelOrigin) else None

    @property
    def source_chat_id(self) -> str | None:
        """The platform chat the session answers, if a channel opened it."""
        return self.origin.chat_id if isinstance(self.origin, ChannelOrigin) else None

    @property
    def source_chat_name(self) -> str | None:
        """That chat's title, when the platform gave one."""
        return self.origin.chat_name if isinstance(self.origin, ChannelOrigin) else None


def bind_state(state: AgentState, session_id: str) -> None:
    if not state.session_id:
        state.session_id = session_id
    elif state.session_id != session_id:
        raise ValueError(
            f"state.session_id is {state.session_id!r} but it is being saved as session "
            f"{session_id!r}; a state belongs to one session"
        )


def new_body(
    config: SessionConfig | None,
    state: AgentState,
    origin: SessionOrigin,
    team_id: str | None = None,
    *,
    created_at: datetime | None = None,
    updated_at: datetime | None = None,
) -> SessionBody:
    """A record body; ``source`` follows ``origin``, the timestamps default to now."""
    now = utcnow()
    return SessionBody(
        config=copy_config(config) if config is not None else SessionConfig(),
        state=state,
        source=SessionSource(origin.type),
        origin=origin,
        team_id=team_id,
        created_at=created_at or now,
        updated_at=updated_at or now,
    )
