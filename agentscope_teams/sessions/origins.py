"""Where a session came from: AgentScope's ``SessionSource`` values and its tagged ``origin`` union.

An origin is fixed when the session is created. Its ``type`` is the session's :class:`SessionSource`;
the schedule and channel kinds carry the ids that later look-ups (``list_sessions_by_schedule``)
filter on. Besides AgentScope's kinds (user, schedule, channel, team, sop) there are this project's
own: api, subagent and system.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from ..records import InputRecord


class SessionSource(StrEnum):
    """Who or what opened the session (the ``type`` of its origin)."""

    USER = "user"
    SCHEDULE = "schedule"
    CHANNEL = "channel"
    TEAM = "team"
    SOP = "sop"
    API = "api"
    SUBAGENT = "subagent"
    SYSTEM = "system"


class _Origin(InputRecord):
    """An unknown field is refused, but kept in a stored origin (a newer release's)."""

    model_config = ConfigDict(frozen=True)


class UserOrigin(_Origin):
    """A person opened the session."""

    type: Literal["user"] = "user"


class ScheduleOrigin(_Origin):
    """A schedule opened the session when it fired."""

    type: Literal["schedule"] = "schedule"
    schedule_id: str


class ChannelOrigin(_Origin):
    """A message arriving on a chat platform channel opened the session."""

    type: Literal["channel"] = "channel"
    channel_id: str
    chat_id: str
    chat_name: str | None = None
    channel_user_id: str | None = None


class TeamOrigin(_Origin):
    """A team opened the session for one of its members (the team is ``record.team_id``)."""

    type: Literal["team"] = "team"


class SOPOrigin(_Origin):
    """A standard-operating-procedure run opened the session for one of its conversations."""

    type: Literal["sop"] = "sop"
    sop_run_id: str
    session_key: str


class ApiOrigin(_Origin):
    """A program opened the session through the API."""

    type: Literal["api"] = "api"


class SubagentOrigin(_Origin):
    """A parent agent spawned a subagent in this session."""

    type: Literal["subagent"] = "subagent"


class SystemOrigin(_Origin):
    """The framework itself opened the session."""

    type: Literal["system"] = "system"


SessionOrigin = Annotated[
    UserOrigin
    | ScheduleOrigin
    | ChannelOrigin
    | TeamOrigin
    | SOPOrigin
    | ApiOrigin
    | SubagentOrigin
    | SystemOrigin,
    Field(discriminator="type"),
]

_PLAIN: dict[str, type[_Origin]] = {
    "user": UserOrigin,
    "team": TeamOrigin,
    "api": ApiOrigin,
    "subagent": SubagentOrigin,
    "system": SystemOrigin,
}


def origin_of(
    origin: SessionOrigin | None = None,
    source: SessionSource | str | Any = None,
    schedule_id: str | None = None,
    chat_id: str | None = None,
    chat_name: str | None = None,
    channel_id: str | None = None,
) -> SessionOrigin:
    """The origin an ``upsert_session`` call describes, from ``origin`` or AgentScope's flat arguments.

    ``source`` may also be an origin object (AgentScope accepts that too). A schedule source needs
    ``source_schedule_id`` and a channel source ``source_channel_id`` and ``source_chat_id``:
    without them ``ValueError`` names what is missing.
    """
    if origin is not None:
        return origin
    if isinstance(source, _Origin):
        return source  # type: ignore[return-value]
    kind = SessionSource(source) if source is not None else None
    if kind is None:
        kind = SessionSource.SCHEDULE if schedule_id else SessionSource.USER
        if channel_id or chat_id:
            kind = SessionSource.CHANNEL
    if kind is SessionSource.SCHEDULE:
        if not schedule_id:
            raise ValueError(
                "source='schedule' needs source_schedule_id (the schedule that opened the session)"
            )
        return ScheduleOrigin(schedule_id=schedule_id)
    if kind is SessionSource.CHANNEL:
        if not (channel_id and chat_id):
            raise ValueError(
                "source='channel' needs source_channel_id and source_chat_id (where replies go)"
            )
        return ChannelOrigin(channel_id=channel_id, chat_id=chat_id, chat_name=chat_name)
    if kind is SessionSource.SOP:
        raise ValueError("source='sop' needs origin=SOPOrigin(sop_run_id=..., session_key=...)")
    return _PLAIN[kind.value]()  # type: ignore[return-value]
