"""Session records: the config fixed at creation, what is persisted, and what a load returns."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..message import utcnow
from ..state import STATE_SCHEMA_VERSION, AgentState, check_schema_version

SESSION_SCHEMA_VERSION = 1


class SessionSource(StrEnum):
    """Who opened the session."""

    USER = "user"
    API = "api"
    SUBAGENT = "subagent"
    TEAM = "team"
    SYSTEM = "system"


class SessionConfig(BaseModel):
    """Configuration fixed when the session is created (model, workspace, free-form metadata)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str | None = None
    system_prompt: str | None = None
    workspace: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class _Body(BaseModel):
    """What is persisted; the version lives in the store, not in the body."""

    schema_version: int = SESSION_SCHEMA_VERSION
    config: SessionConfig
    state: AgentState
    source: SessionSource = SessionSource.USER
    created_at: datetime
    updated_at: datetime

    @model_validator(mode="after")
    def _check_version(self) -> _Body:  # after, not before: keeps pydantic's fast JSON path
        check_schema_version(
            {"schema_version": self.schema_version}, SESSION_SCHEMA_VERSION, "session record"
        )
        return self


EMPTY_STATE = AgentState()
VERSIONED_PARTS = {
    None: (SESSION_SCHEMA_VERSION, "session record"),
    "state": (STATE_SCHEMA_VERSION, "AgentState"),
}


class SessionRecord(BaseModel):
    """A session as loaded: addressing ids, config, state, store version and timestamps."""

    org_id: str | None
    user_id: str | None
    agent_id: str
    session_id: str
    config: SessionConfig
    state: AgentState
    version: int
    source: SessionSource
    created_at: datetime
    updated_at: datetime


def bind_state(state: AgentState, session_id: str) -> None:
    if not state.session_id:
        state.session_id = session_id
    elif state.session_id != session_id:
        raise ValueError(
            f"state.session_id is {state.session_id!r} but it is being saved as session "
            f"{session_id!r}; a state belongs to one session"
        )


def new_body(config: SessionConfig | None, state: AgentState, source: SessionSource) -> _Body:
    now = utcnow()
    return _Body(
        config=config or SessionConfig(), state=state, source=source, created_at=now, updated_at=now
    )
