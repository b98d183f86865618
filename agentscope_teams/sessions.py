"""Sessions: the seed's ``get_session`` / ``upsert_session`` / ``update_session_state`` over any store.

One record per (org, user, agent, session), at key
``("sessions", "o:<org>", "u:<user>", "a:<agent>", "s:<session>")``. The record holds the immutable
:class:`SessionConfig`, the mutable :class:`AgentState`, timestamps and the source; its version is the
store's version, so a stale writer gets :class:`VersionConflict` instead of silently overwriting.

``update_session_state`` is the hot path. Without ``expected_version`` it replaces the state whatever the
current version is (the seed's semantics) but never loses the config: it remembers the last version it
saw for each session and writes with that version in one round trip, re-reading only when another writer
got there first. With ``expected_version`` the write happens only at that version. Creating with
``upsert_session(expected_version=0)`` (what ``HarnessAgent`` does for a new session) is a single
create-only write, without reading first.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from datetime import datetime
from enum import StrEnum
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .context import org_segment, user_segment, validate_identifier
from .errors import SchemaVersionError, VersionConflict
from .message import utcnow
from .state import STATE_SCHEMA_VERSION, AgentState, check_schema_version, raise_if_newer
from .store.base import BaseStore, Key

SESSION_SCHEMA_VERSION = 1
_CACHE_SIZE = 4096


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


_EMPTY_STATE = AgentState()
_VERSIONED_PARTS = {
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


def session_key(org_id: str | None, user_id: str | None, agent_id: str, session_id: str) -> Key:
    """The store key of one session; every id is validated and typed."""
    return (
        "sessions",
        org_segment(org_id),
        user_segment(user_id),
        "a:" + validate_identifier(agent_id, "agent_id"),
        "s:" + validate_identifier(session_id, "session_id"),
    )


def _bind_state(state: AgentState, session_id: str) -> None:
    if not state.session_id:
        state.session_id = session_id
    elif state.session_id != session_id:
        raise ValueError(
            f"state.session_id is {state.session_id!r} but it is being saved as session "
            f"{session_id!r}; a state belongs to one session"
        )


def _new_body(config: SessionConfig | None, state: AgentState, source: SessionSource) -> _Body:
    now = utcnow()
    return _Body(
        config=config or SessionConfig(), state=state, source=source, created_at=now, updated_at=now
    )


class SessionStorage:
    """Session records over any :class:`BaseStore`. ``ttl`` (seconds) expires idle sessions."""

    def __init__(self, store: BaseStore, *, ttl: float | None = None, owns_store: bool = False):
        self.store = store
        self.ttl = ttl
        self._owns_store = owns_store
        # key -> (version, body without state): lets update_session_state write in one round trip.
        self._seen: OrderedDict[Key, tuple[int, _Body]] = OrderedDict()

    async def __aenter__(self) -> Self:
        if self._owns_store:
            await self.store.__aenter__()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_store:
            await self.store.aclose()

    def _remember(self, key: Key, version: int, body: _Body) -> None:
        # Keep only what is needed to rewrite the record, not the (possibly large) state.
        self._seen[key] = (version, body.model_copy(update={"state": _EMPTY_STATE}))
        self._seen.move_to_end(key)
        if len(self._seen) > _CACHE_SIZE:
            self._seen.popitem(last=False)

    async def _load(self, key: Key) -> tuple[int, _Body] | None:
        entry = await self.store.get(key)
        if entry is None:
            self._seen.pop(key, None)
            return None
        try:
            body = _Body.model_validate_json(entry.value)
        except SchemaVersionError:
            raise
        except ValidationError as exc:
            raise_if_newer(entry.value, _VERSIONED_PARTS)  # a newer record: say "upgrade"
            raise SchemaVersionError(f"session record at {key!r} cannot be read: {exc}") from exc
        self._remember(key, entry.version, body)
        return entry.version, body

    @staticmethod
    def _record(
        key: Key, ids: tuple[str | None, str | None], version: int, b: _Body
    ) -> SessionRecord:
        return SessionRecord(
            org_id=ids[0],
            user_id=ids[1],
            agent_id=key[3][2:],
            session_id=key[4][2:],
            config=b.config,
            state=b.state,
            version=version,
            source=b.source,
            created_at=b.created_at,
            updated_at=b.updated_at,
        )

    async def get_session(
        self, user_id: str | None, agent_id: str, session_id: str, *, org_id: str | None = None
    ) -> SessionRecord | None:
        """The session's record, or None if it does not exist."""
        key = session_key(org_id, user_id, agent_id, session_id)
        loaded = await self._load(key)
        if loaded is None:
            return None
        return self._record(key, (org_id, user_id), *loaded)

    async def upsert_session(
        self,
        *,
        user_id: str | None,
        agent_id: str,
        config: SessionConfig | None = None,
        state: AgentState | None = None,
        session_id: str | None = None,
        source: SessionSource = SessionSource.USER,
        org_id: str | None = None,
        expected_version: int | None = None,
    ) -> SessionRecord:
        """Create the session (a new id when ``session_id`` is None) or replace its state.

        The config of an existing session cannot change: a different config raises ``ValueError``.
        ``expected_version`` (0 = create only) makes the write conditional: ``VersionConflict``.
        """
        session_id = session_id or uuid.uuid4().hex
        key = session_key(org_id, user_id, agent_id, session_id)
        state = state if state is not None else AgentState()
        _bind_state(state, session_id)
        ids = (org_id, user_id)
        if expected_version == 0:  # create only: one conditional write, no read first
            body = _new_body(config, state, source)
            return self._record(key, ids, await self._write(key, body, 0), body)
        while True:
            loaded = await self._load(key)
            found = 0 if loaded is None else loaded[0]
            if expected_version is not None and found != expected_version:
                raise VersionConflict(key, expected_version, found)
            if loaded is None:
                body = _new_body(config, state, source)
            else:
                old = loaded[1]
                if config is not None and config != old.config:
                    raise ValueError(
                        f"session {session_id!r} of agent {agent_id!r} already exists with another "
                        "config; a session's config is fixed at creation (delete the session first)"
                    )
                body = old.model_copy(update={"state": state, "updated_at": utcnow()})
            try:
                return self._record(key, ids, await self._write(key, body, found), body)
            except VersionConflict:
                if expected_version is not None:
                    raise

    async def update_session_state(
        self,
        *,
        user_id: str | None,
        agent_id: str,
        session_id: str,
        state: AgentState,
        expected_version: int | None = None,
        org_id: str | None = None,
    ) -> int:
        """Replace the session's state and return the new version.

        Raises ``KeyError`` if the session does not exist, ``VersionConflict`` if ``expected_version``
        is given and the stored version differs.
        """
        key = session_key(org_id, user_id, agent_id, session_id)
        _bind_state(state, session_id)
        seen = self._seen.get(key)
        while True:
            if seen is None or (expected_version is not None and seen[0] != expected_version):
                seen = await self._load(key)
                if seen is None:
                    raise KeyError(
                        f"session {session_id!r} of agent {agent_id!r} does not exist for user "
                        f"{user_id!r}; create it with upsert_session first"
                    )
            version, old = seen
            if expected_version is not None and version != expected_version:
                raise VersionConflict(key, expected_version, version)
            body = old.model_copy(update={"state": state, "updated_at": utcnow()})
            try:
                return await self._write(key, body, version)
            except VersionConflict:
                if expected_version is not None:
                    raise
                seen = None

    async def _write(self, key: Key, body: _Body, expected: int) -> int:
        data = body.model_dump_json().encode()
        try:
            version = await self.store.put(key, data, expected_version=expected, ttl=self.ttl)
        except VersionConflict:
            self._seen.pop(key, None)
            raise
        self._remember(key, version, body)
        return version

    async def list_sessions(
        self, user_id: str | None, agent_id: str | None = None, *, org_id: str | None = None
    ) -> list[SessionRecord]:
        """Every session of the user (of one agent when ``agent_id`` is given), oldest key first."""
        prefix: Key = ("sessions", org_segment(org_id), user_segment(user_id))
        if agent_id is not None:
            prefix += ("a:" + validate_identifier(agent_id, "agent_id"),)
        records: list[SessionRecord] = []
        after: Key | None = None
        while True:
            keys = await self.store.list_keys(prefix, limit=500, after=after)
            for key in keys:
                if len(key) == 5:
                    loaded = await self._load(key)
                    if loaded is not None:
                        records.append(self._record(key, (org_id, user_id), *loaded))
            if len(keys) < 500:
                return records
            after = keys[-1]

    async def delete_session(
        self,
        user_id: str | None,
        agent_id: str,
        session_id: str,
        *,
        org_id: str | None = None,
        expected_version: int | None = None,
    ) -> bool:
        """Delete the session; True if it existed."""
        key = session_key(org_id, user_id, agent_id, session_id)
        self._seen.pop(key, None)
        return await self.store.delete(key, expected_version=expected_version)


class RedisStorage(SessionStorage):
    """``SessionStorage`` over a :class:`RedisStore` it creates and closes (the seed's RedisStorage)."""

    def __init__(
        self,
        host: str = "localhost",
        port: int = 6379,
        db: int = 0,
        *,
        url: str | None = None,
        password: str | None = None,
        ttl: float | None = None,
        **store_options: Any,
    ) -> None:
        from .store.redis import RedisStore

        if url is None:
            auth = f":{quote(password, safe='')}@" if password else ""
            url = f"redis://{auth}{host}:{port}/{db}"
        super().__init__(RedisStore(url, **store_options), ttl=ttl, owns_store=True)
