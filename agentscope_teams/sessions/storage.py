"""Sessions: the seed's ``get_session`` / ``upsert_session`` / ``update_session_state`` over any store.

One record per (org, user, agent, session) at its :class:`SessionAddress`'s key (the layout is in
:mod:`agentscope_teams.keys`): the immutable :class:`SessionConfig`, the mutable :class:`AgentState`,
timestamps and the source. Its version is the store's, so a stale writer gets
:class:`VersionConflict` instead of silently overwriting. The ``*_at`` methods take an address built
once per call; the seed's methods, which take the ids, build one and delegate to them.

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
from types import TracebackType
from typing import Self

from pydantic import ValidationError

from ..errors import LeaseLostError, SchemaVersionError, VersionConflict
from ..keys import SESSION, SessionAddress, sessions_prefix
from ..listing import UNREADABLE, Listing, Unreadable, unreadable
from ..message import utcnow
from ..state import AgentState, raise_if_newer
from ..store.base import BaseStore, Fence, Key
from .records import (
    EMPTY_STATE,
    VERSIONED_PARTS,
    SessionConfig,
    SessionRecord,
    SessionSource,
    _Body,
    bind_state,
    new_body,
)

_CACHE_SIZE = 4096


def session_key(org_id: str | None, user_id: str | None, agent_id: str, session_id: str) -> Key:
    """The store key of one session; every id is validated and typed."""
    return SessionAddress(org_id, user_id, agent_id, session_id).key


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
        self._seen[key] = (version, body.model_copy(update={"state": EMPTY_STATE}))
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
            raise_if_newer(entry.value, VERSIONED_PARTS)  # a newer record: say "upgrade"
            raise SchemaVersionError(f"session record at {key!r} cannot be read: {exc}") from exc
        self._remember(key, entry.version, body)
        return entry.version, body

    @staticmethod
    def _record(addr: SessionAddress, version: int, b: _Body) -> SessionRecord:
        return SessionRecord(
            org_id=addr.org_id,
            user_id=addr.user_id,
            agent_id=addr.agent_id,
            session_id=addr.session_id,
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
        return await self.get_at(SessionAddress(org_id, user_id, agent_id, session_id))

    async def get_at(self, addr: SessionAddress) -> SessionRecord | None:
        """:meth:`get_session` by address."""
        loaded = await self._load(addr.key)
        return None if loaded is None else self._record(addr, *loaded)

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
        addr = SessionAddress(org_id, user_id, agent_id, session_id or uuid.uuid4().hex)
        return await self.upsert_at(
            addr, config=config, state=state, source=source, expected_version=expected_version
        )

    async def create_at(
        self,
        addr: SessionAddress,
        *,
        config: SessionConfig | None = None,
        state: AgentState | None = None,
        source: SessionSource = SessionSource.USER,
        fence: Fence | None = None,
    ) -> SessionRecord:
        """Create the session with one create-only write; ``VersionConflict`` if it exists.

        ``fence`` makes the write conditional on a lease too (see :class:`~..store.base.Fence`).
        """
        return await self.upsert_at(
            addr, config=config, state=state, source=source, expected_version=0, fence=fence
        )

    async def upsert_at(
        self,
        addr: SessionAddress,
        *,
        config: SessionConfig | None = None,
        state: AgentState | None = None,
        source: SessionSource = SessionSource.USER,
        expected_version: int | None = None,
        fence: Fence | None = None,
    ) -> SessionRecord:
        """:meth:`upsert_session` by address; ``fence`` as in :meth:`create_at`."""
        key = addr.key
        state = state if state is not None else AgentState()
        bind_state(state, addr.session_id)
        if expected_version == 0:  # create only: one conditional write, no read first
            body = new_body(config, state, source)
            return self._record(addr, await self._write(key, body, 0, fence), body)
        while True:
            loaded = await self._load(key)
            found = 0 if loaded is None else loaded[0]
            if expected_version is not None and found != expected_version:
                raise VersionConflict(key, expected_version, found)
            if loaded is None:
                body = new_body(config, state, source)
            else:
                old = loaded[1]
                if config is not None and config != old.config:
                    raise ValueError(
                        f"session {addr.session_id!r} of agent {addr.agent_id!r} already exists "
                        "with another config; a session's config is fixed at creation (delete the "
                        "session first)"
                    )
                body = old.model_copy(update={"state": state, "updated_at": utcnow()})
            try:
                return self._record(addr, await self._write(key, body, found, fence), body)
            except VersionConflict as exc:
                if expected_version is not None or isinstance(exc, LeaseLostError):
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
        addr = SessionAddress(org_id, user_id, agent_id, session_id)
        return await self.update_at(addr, state, expected_version=expected_version)

    async def update_at(
        self,
        addr: SessionAddress,
        state: AgentState,
        *,
        expected_version: int | None = None,
        fence: Fence | None = None,
    ) -> int:
        """:meth:`update_session_state` by address; ``fence`` as in :meth:`create_at`."""
        key = addr.key
        bind_state(state, addr.session_id)
        seen = self._seen.get(key)
        while True:
            if seen is None or (expected_version is not None and seen[0] != expected_version):
                seen = await self._load(key)
                if seen is None:
                    raise KeyError(
                        f"session {addr.session_id!r} of agent {addr.agent_id!r} does not exist "
                        f"for user {addr.user_id!r}; create it with upsert_session first"
                    )
            version, old = seen
            if expected_version is not None and version != expected_version:
                raise VersionConflict(key, expected_version, version)
            body = old.model_copy(update={"state": state, "updated_at": utcnow()})
            try:
                return await self._write(key, body, version, fence)
            except VersionConflict as exc:
                if expected_version is not None or isinstance(exc, LeaseLostError):
                    raise
                seen = None

    async def _write(self, key: Key, body: _Body, expected: int, fence: Fence | None) -> int:
        data = body.model_dump_json().encode()
        try:
            if fence is None:  # keeps stores written before fences existed working
                version = await self.store.put(key, data, expected_version=expected, ttl=self.ttl)
            else:
                version = await self.store.put(
                    key, data, expected_version=expected, ttl=self.ttl, fence=fence
                )
        except VersionConflict:
            self._seen.pop(key, None)
            raise
        self._remember(key, version, body)
        return version

    async def list_sessions(
        self, user_id: str | None, agent_id: str | None = None, *, org_id: str | None = None
    ) -> Listing[SessionRecord]:
        """Every session of the user (of one agent when ``agent_id`` is given), oldest key first.

        A record that cannot be decoded (corrupt, or written by a newer version) does not stop the
        listing: it is left out, logged, and named in the result's ``problems`` (a list of
        :class:`~.listing.Unreadable`: the session id, its key and the reason). The result is a
        ``list`` of the readable records, as before. :meth:`get_session` of that session raises.
        """
        prefix = sessions_prefix(org_id, user_id, agent_id)
        records: list[SessionRecord] = []
        problems: list[Unreadable] = []
        after: Key | None = None
        while True:
            keys = await self.store.list_keys(prefix, limit=500, after=after)
            for key in keys:
                if SESSION.match(key) is not None:
                    addr = SessionAddress.parse(key)
                    try:
                        loaded = await self._load(addr.key)
                    except UNREADABLE as exc:
                        problems.append(unreadable("session", addr.session_id, addr.key, exc))
                        continue
                    if loaded is not None:
                        records.append(self._record(addr, *loaded))
            if len(keys) < 500:
                return Listing(records, problems)
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
        addr = SessionAddress(org_id, user_id, agent_id, session_id)
        return await self.delete_at(addr, expected_version=expected_version)

    async def delete_at(self, addr: SessionAddress, *, expected_version: int | None = None) -> bool:
        """:meth:`delete_session` by address."""
        self._seen.pop(addr.key, None)
        return await self.store.delete(addr.key, expected_version=expected_version)
