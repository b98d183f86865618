"""Sessions: the seed's ``get_session`` / ``upsert_session`` / ``update_session_state`` over any store.

One record per (org, user, agent, session) at its :class:`SessionAddress`'s key (the layout is in
:mod:`agentscope_teams.keys`): the :class:`SessionConfig` (replaceable by ``upsert_session``, counted
in ``config_version``), the mutable :class:`AgentState`, timestamps, the origin and the team. Its
version is the store's, so a stale writer gets :class:`VersionConflict` instead of silently
overwriting. The ``*_at`` methods take an address built once per call; the seed's methods, which
take the ids, build one and delegate to them.

``update_session_state`` is the hot path. Without ``expected_version`` it replaces the state whatever the
current version is (the seed's semantics) but never loses the config: it remembers the last version it
saw for each session and writes with that version in one round trip, re-reading only when another writer
got there first. With ``expected_version`` the write happens only at that version. Creating with
``upsert_session(expected_version=0)`` (what ``HarnessAgent`` does for a new session) is a single
create-only write, without reading first.

On a store with :class:`~..store.base.FieldRecords` (Redis, Redis Cluster) a record rewritten
after its creation is segmented (:mod:`.segments`): a small head (:class:`~.records.SegmentedHead`)
as the value and the context in immutable segments beside it, so a save sends only the segments
that changed and a load parses only the segments this process has not cached. Every guarantee of
the whole-value record holds: the head is written with the same version check and fence in the
same atomic operation as the segments; a record written whole (every other store, or before
segments existed) loads as before and becomes segmented at its next write.

A deleted session is not removed from the store: :meth:`SessionStorage.delete_at` replaces it with
a :data:`~.records.TOMBSTONE` (with the storage's ``ttl``; none: it stays), which reads, lists and
updates as absent. Creating the session again writes over the tombstone at its version, so the
versions of a key never repeat: store versions restart at 1 once a key is gone, and a writer
still holding version N of the deleted record (an ``expected_version``, or the version this
storage remembers for its one-round-trip save) could otherwise write at N onto the new record once
it got there, taking the old record's config and ``created_at`` with it.

A session whose record expired (``ttl``; a tombstone expires too), or that something other than
this class deleted, starts at version 1 again: no tombstone is left. So a storage trusts the
version it remembers only while the record cannot have expired since it was last written (its
``updated_at`` plus ``ttl``, less a margin for the clocks of the hosts: a quarter of the ttl, at
most 30 s); after that it reads the record before writing, and the seed's save replaces the
state of whatever record is there, never writing the expired record's config and ``created_at``
onto a new one. A caller's ``expected_version`` that this storage saw on the expired record, and
that the new record has reached again, is a :class:`VersionConflict` (the ``created_at`` of the
record read differs from the one remembered). Not covered: an ``expected_version`` this storage
never saw the old record at (another process's, or forgotten from its cache of 4096 sessions),
and a write that stalls longer than the margin between that check and the store.
"""

from __future__ import annotations

import math
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from datetime import UTC
from itertools import chain
from types import TracebackType
from typing import Any, Self

from pydantic import ValidationError

from ..errors import LeaseLostError, SchemaVersionError, VersionConflict
from ..keys import SESSION, SessionAddress, sessions_prefix
from ..listing import UNREADABLE, Listing, Unreadable, unreadable
from ..message import utcnow
from ..records import FROM_STORE
from ..state import AgentState, raise_if_newer
from ..store.base import BaseStore, Entry, Fence, Key, field_records_of, get_many
from .config import SessionConfig, copy_config
from .origins import SessionOrigin, SessionSource, origin_of
from .queries import ImportOutcome, ListOrder, by_channel, by_schedule, ordered, same_body
from .records import (
    EMPTY_STATE,
    HEAD_MARK,
    HEAD_SCHEMA_VERSION,
    HEAD_VERSIONED_PARTS,
    TOMBSTONE,
    VERSIONED_PARTS,
    SegmentedHead,
    SessionBody,
    SessionRecord,
    bind_state,
    new_body,
)
from .segments import SHARED_CACHE, Layout, Segment, SegmentCache, field_of, parse_segment, plan

_CACHE_SIZE = 4096
_PAGE = 500  # keys per list_keys page (and per get_many in listings)
_SEGMENT_TRIES = 5  # loads of a head whose segments a concurrent write replaced meanwhile
#: Seconds by which the clocks of two hosts writing one session may differ (see _lives_until).
_CLOCK_SKEW = 30.0


def _fresh(state: AgentState | None, addr: SessionAddress) -> AgentState:
    return state if state is not None else AgentState(session_id=addr.session_id)


def _updated(
    old: SessionBody, config: SessionConfig | None, state: AgentState | None
) -> SessionBody:
    """``old`` with a new config (counted when it differs) and/or state; ``None`` keeps either."""
    update: dict[str, Any] = {"updated_at": utcnow()}
    if state is not None:
        update["state"] = state
    if config is not None and config != old.config:
        update["config"] = copy_config(config)  # the caller may change its own later
        update["config_version"] = old.config_version + 1
    return old.model_copy(update=update)


def session_key(org_id: str | None, user_id: str | None, agent_id: str, session_id: str) -> Key:
    """The store key of one session; every id is validated and typed."""
    return SessionAddress(org_id, user_id, agent_id, session_id).key


class SessionStorage:
    """Session records over any :class:`BaseStore`. ``ttl`` (seconds) expires idle sessions.

    ``segment_cache`` holds the parsed context segments of segmented records (module docs); by
    default the process-wide :data:`~.segments.SHARED_CACHE`.
    """

    def __init__(
        self,
        store: BaseStore,
        *,
        ttl: float | None = None,
        owns_store: bool = False,
        segment_cache: SegmentCache | None = None,
    ):
        self.store = store
        self.ttl = ttl
        self._owns_store = owns_store
        self._fields = field_records_of(store)
        self._cache = SHARED_CACHE if segment_cache is None else segment_cache
        # key -> (version, body without state, segment layout or None for a whole value): lets
        # update_session_state write in one round trip, sending only the segments that changed.
        # The fourth item: until when (time.monotonic) the record cannot have expired (_trusted).
        self._seen: OrderedDict[Key, tuple[int, SessionBody, Layout | None, float]] = OrderedDict()
        # The config and origin the last remembered body kept: an equal one is shared (_remember).
        self._shared: tuple[SessionConfig | None, SessionOrigin | None] = (None, None)

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

    def _remember(
        self,
        key: Key,
        version: int,
        body: SessionBody,
        layout: Layout | None = None,
    ) -> None:
        # Keep only what is needed to rewrite the record, not the (possibly large) state.
        # The config is kept as is: every body read or written holds a config of this storage's
        # own (parsed, or copied from the caller's by new_body / _updated / import_at), and a
        # caller is only ever given a copy (_record), so no caller can change the one kept.
        # Nothing changes a kept config or origin either, so sessions with equal ones (an agent's
        # sessions) share one: a few objects fewer per remembered session for the collector.
        config, origin = self._shared
        if body.config is not config and body.config != config:
            config = body.config
        if body.origin is not origin and body.origin != origin:
            origin = body.origin
        self._shared = (config, origin)
        kept = {"state": EMPTY_STATE, "config": config, "origin": origin}
        until = self._lives_until(body)
        self._seen[key] = (version, body.model_copy(update=kept), layout, until)
        self._seen.move_to_end(key)
        if len(self._seen) > _CACHE_SIZE:
            self._seen.popitem(last=False)

    def _lives_until(self, body: SessionBody) -> float:
        """Until when (``time.monotonic``) the record last written at ``body.updated_at`` cannot
        have expired: its ``updated_at`` plus the storage's ``ttl``, less :data:`_CLOCK_SKEW`
        (at most a quarter of the ttl) for the clocks of the hosts that wrote it."""
        if self.ttl is None:
            return math.inf
        updated = body.updated_at
        if updated.tzinfo is None:  # an imported record's naive time: taken as UTC
            updated = updated.replace(tzinfo=UTC)
        age = (utcnow() - updated).total_seconds()
        return time.monotonic() + self.ttl - max(age, 0.0) - min(self.ttl / 4, _CLOCK_SKEW)

    def _remembered(self, key: Key) -> tuple[int, SessionBody, Layout | None, float] | None:
        """What this storage remembers of ``key``, while the record cannot have expired since:
        once it may have, another process may have created the session again, and its versions
        restarted at 1 (an expiry leaves no tombstone), so the version remembered proves nothing."""
        seen = self._seen.get(key)
        return seen if seen is not None and time.monotonic() < seen[3] else None

    def _recreated(
        self, key: Key, stale: tuple[int, SessionBody, Layout | None, float] | None
    ) -> bool:
        """Whether the record just loaded at ``key`` is another one than ``stale`` remembered at
        the same version: the session expired and was created again (a later ``created_at``)."""
        seen = self._seen.get(key)
        return (
            stale is not None
            and seen is not None
            and seen[0] == stale[0]
            and seen[1].created_at != stale[1].created_at
        )

    async def _load(self, key: Key) -> tuple[int, SessionBody] | None:
        return await self._read(key, await self.store.get(key))

    async def _read(self, key: Key, entry: Entry | None) -> tuple[int, SessionBody] | None:
        """The stored record at ``key`` (remembered for the next write), whole or segmented;
        ``SchemaVersionError`` when it cannot be read."""
        if entry is None or entry.value == TOMBSTONE:
            self._seen.pop(key, None)
            return None
        if entry.value.startswith(HEAD_MARK):
            return await self._read_segmented(key, entry)
        return self._decode(key, entry)

    async def _read_segmented(self, key: Key, entry: Entry) -> tuple[int, SessionBody] | None:
        """A segmented record: its head, and each segment from the cache or, when missing, from
        the store in one read (re-read from the head if a concurrent write replaced them)."""
        for _ in range(_SEGMENT_TRIES):
            head = self._head(key, entry.value)
            segments = await self._segments(key, head)
            if segments is not None:
                body = head.body
                body.state.context = list(chain.from_iterable(s.messages for s in segments))
                self._remember(key, entry.version, body, tuple(head.segments))
                return entry.version, body
            found = await self.store.get(key)
            if found is None or found.value == TOMBSTONE:
                self._seen.pop(key, None)
                return None
            entry = found
        raise VersionConflict(key, entry.version, entry.version)  # rewritten on every try

    def _head(self, key: Key, value: bytes) -> SegmentedHead:
        try:
            return SegmentedHead.model_validate_json(value, context=FROM_STORE)
        except SchemaVersionError:
            raise
        except ValidationError as exc:
            raise_if_newer(value, HEAD_VERSIONED_PARTS)
            raise SchemaVersionError(f"session record at {key!r} cannot be read: {exc}") from exc

    async def _segments(self, key: Key, head: SegmentedHead) -> list[Segment] | None:
        """The head's segments in order; None when one is gone (the record was rewritten)."""
        if self._fields is None:
            raise SchemaVersionError(
                f"session record at {key!r} is segmented (schema_version {HEAD_SCHEMA_VERSION}) "
                "but this store cannot read its segments; open it with the Redis store"
            )
        found = {sid: self._cache.get(sid) for sid, _ in head.segments}
        missing = [sid for sid, seg in found.items() if seg is None]
        if missing:
            datas = await self._fields.get_fields(key, [field_of(sid) for sid in missing])
            for sid, data in zip(missing, datas, strict=True):
                if data is None:
                    return None
                parsed = parse_segment(sid, data, f"the session record at {key!r}")
                found[sid] = parsed
                self._cache.add(parsed)
        segments: list[Segment] = []
        for sid, count in head.segments:
            got = found[sid]
            if got is None or len(got.messages) != count:
                raise SchemaVersionError(f"context segment {sid} of {key!r} has a wrong count")
            segments.append(got)
        return segments

    def _decode(self, key: Key, entry: Entry) -> tuple[int, SessionBody]:
        """A whole-value record."""
        try:
            body = SessionBody.model_validate_json(entry.value, context=FROM_STORE)
        except SchemaVersionError:
            raise
        except ValidationError as exc:
            raise_if_newer(entry.value, VERSIONED_PARTS)  # a newer record: say "upgrade"
            raise SchemaVersionError(f"session record at {key!r} cannot be read: {exc}") from exc
        self._remember(key, entry.version, body)
        return entry.version, body

    @staticmethod
    def _record(addr: SessionAddress, version: int, b: SessionBody) -> SessionRecord:
        return SessionRecord(
            org_id=addr.org_id,
            user_id=addr.user_id,
            agent_id=addr.agent_id,
            session_id=addr.session_id,
            config=copy_config(b.config),  # the caller's to change; the cache keeps its own
            state=b.state,
            version=version,
            source=b.source,
            origin=b.origin_or_source(),
            team_id=b.team_id,
            config_version=b.config_version,
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

    async def record_from(self, addr: SessionAddress, entry: Entry | None) -> SessionRecord | None:
        """The record in ``entry``, as just read from ``addr``'s key (with its lease, say); a
        segmented record's missing segments are read from the store, as by :meth:`get_at`."""
        loaded = await self._read(addr.key, entry)
        return None if loaded is None else self._record(addr, *loaded)

    async def upsert_session(
        self,
        user_id: str | None,
        agent_id: str,
        config: SessionConfig | None = None,
        state: AgentState | None = None,
        session_id: str | None = None,
        origin: SessionOrigin | None = None,
        source: SessionSource | str | None = None,
        source_schedule_id: str | None = None,
        source_chat_id: str | None = None,
        source_chat_name: str | None = None,
        source_channel_id: str | None = None,
        *,
        org_id: str | None = None,
        expected_version: int | None = None,
    ) -> SessionRecord:
        """Create the session (a new id when ``session_id`` is None) or update it.

        On an existing session a given ``config`` replaces the stored one (``config_version`` + 1
        when it differs) and a given ``state`` replaces the state; ``None`` keeps either. The origin
        (``origin``, or AgentScope's flat ``source`` / ``source_*`` arguments) is fixed at creation.
        ``expected_version`` (0 = create only) makes the write conditional: ``VersionConflict``.
        """
        addr = SessionAddress(org_id, user_id, agent_id, session_id or uuid.uuid4().hex)
        found = origin_of(
            origin, source, source_schedule_id, source_chat_id, source_chat_name, source_channel_id
        )
        return await self.upsert_at(
            addr, config=config, state=state, origin=found, expected_version=expected_version
        )

    async def create_at(
        self,
        addr: SessionAddress,
        *,
        config: SessionConfig | None = None,
        state: AgentState | None = None,
        source: SessionSource = SessionSource.USER,
        origin: SessionOrigin | None = None,
        fence: Fence | None = None,
    ) -> SessionRecord:
        """Create the session with one create-only write; ``VersionConflict`` if it exists.

        ``fence`` makes the write conditional on a lease too (see :class:`~..store.base.Fence`).
        """
        return await self.upsert_at(
            addr,
            config=config,
            state=state,
            source=source,
            origin=origin,
            expected_version=0,
            fence=fence,
        )

    async def insert_at(
        self,
        addr: SessionAddress,
        state: AgentState,
        *,
        model: str | None = None,
        source: SessionSource = SessionSource.USER,
        fence: Fence | None = None,
    ) -> int:
        """Create the session with ``state`` and a default config naming ``model`` (an agent's
        new session), as :meth:`create_at` does, and return its version: no record is built and
        no config copied for a caller that needs only the version. ``VersionConflict`` if it
        exists; ``fence`` as in :meth:`create_at`."""
        bind_state(state, addr.session_id)
        body = new_body(None, state, origin_of(None, source))
        body.config.model = model  # the body's own config, made by new_body
        return await self._create(addr.key, body, fence)

    async def upsert_at(
        self,
        addr: SessionAddress,
        *,
        config: SessionConfig | None = None,
        state: AgentState | None = None,
        source: SessionSource = SessionSource.USER,
        origin: SessionOrigin | None = None,
        expected_version: int | None = None,
        fence: Fence | None = None,
    ) -> SessionRecord:
        """:meth:`upsert_session` by address (``origin`` wins over ``source``); ``fence`` as in
        :meth:`create_at`."""
        key = addr.key
        if state is not None:
            bind_state(state, addr.session_id)
        made = origin_of(origin, source)
        if expected_version == 0:  # create only: one conditional write, no read first
            body = new_body(config, _fresh(state, addr), made)
            return self._record(addr, await self._create(key, body, fence), body)
        stale = self._seen.get(key)
        while True:
            loaded = await self._load(key)
            found = 0 if loaded is None else loaded[0]
            if expected_version is not None and (
                found != expected_version or self._recreated(key, stale)
            ):
                raise VersionConflict(key, expected_version, found)
            try:
                if loaded is None:
                    body = new_body(config, _fresh(state, addr), made)
                    return self._record(addr, await self._create(key, body, fence), body)
                body = _updated(loaded[1], config, state)
                return self._record(addr, await self._write(key, body, found, fence), body)
            except VersionConflict as exc:
                if expected_version is not None or isinstance(exc, LeaseLostError):
                    raise

    async def update_session_state(
        self,
        user_id: str | None,
        agent_id: str,
        session_id: str,
        state: AgentState,
        *,
        org_id: str | None = None,
        expected_version: int | None = None,
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
        stale = self._seen.get(key)  # may predate an expiry: then not trusted, but compared
        remembered = self._remembered(key)
        seen = None if remembered is None else remembered[:2]
        while True:
            if seen is None or (expected_version is not None and seen[0] != expected_version):
                seen = await self._load(key)
                if seen is None:
                    raise KeyError(
                        f"session {addr.session_id!r} of agent {addr.agent_id!r} does not exist "
                        f"for user {addr.user_id!r}; create it with upsert_session first"
                    )
            version, old = seen
            if expected_version is not None and (
                version != expected_version or self._recreated(key, stale)
            ):
                raise VersionConflict(key, expected_version, version)
            body = old.model_copy(update={"state": state, "updated_at": utcnow()})
            try:
                return await self._write(key, body, version, fence)
            except VersionConflict as exc:
                if expected_version is not None or isinstance(exc, LeaseLostError):
                    raise
                seen = None

    async def _create(self, key: Key, body: SessionBody, fence: Fence | None) -> int:
        """Write a new record: create-only, or over the tombstone a deleted session left (at its
        version, so versions go on); ``VersionConflict`` if a live record is there."""
        expected = 0
        while True:
            try:
                return await self._write(key, body, expected, fence, whole=True)
            except VersionConflict as exc:
                if isinstance(exc, LeaseLostError):
                    raise
                entry = await self.store.get(key)
            if entry is not None and entry.value != TOMBSTONE:
                raise VersionConflict(key, 0, entry.version)
            expected = 0 if entry is None else entry.version  # the tombstone (or it expired)

    async def _write(
        self,
        key: Key,
        body: SessionBody,
        expected: int,
        fence: Fence | None,
        *,
        whole: bool = False,
    ) -> int:
        """Write ``body`` at ``expected``: segmented on a store with fields unless ``whole`` (a
        creation, over nothing or a tombstone)."""
        if self._fields is not None and expected > 0 and not whole:
            return await self._write_segmented(key, body, expected, fence)
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

    async def _write_segmented(
        self, key: Key, body: SessionBody, expected: int, fence: Fence | None
    ) -> int:
        """Rewrite a record as a head and the segments that changed (:func:`~.segments.plan`)."""
        assert self._fields is not None
        seen = self._seen.get(key)  # the callers read it unless they trust it (_remembered)
        if seen is None or seen[0] != expected:  # which segments are stored: read it first
            loaded = await self._load(key)
            if loaded is None or loaded[0] != expected:
                raise VersionConflict(key, expected, 0 if loaded is None else loaded[0])
            seen = self._seen[key]
        todo = plan(body.state.context, seen[2] or (), self._cache)
        bare = body.model_copy(update={"state": body.state.model_copy(update={"context": []})})
        head = SegmentedHead.model_construct(
            segments=list(todo.layout), schema_version=HEAD_SCHEMA_VERSION, body=bare
        )
        try:
            version = await self._fields.put_fields(
                key,
                head.model_dump_json().encode(),
                expected_version=expected,
                fields=[(field_of(s.id), s.data) for s in todo.add],
                drop=[field_of(sid) for sid in todo.drop],
                keep=[field_of(sid) for sid in todo.kept],
                ttl=self.ttl,
                fence=fence,
            )
        except VersionConflict:
            self._seen.pop(key, None)
            raise
        for seg in todo.add:
            self._cache.add(seg)
        self._remember(key, version, body, todo.layout)
        return version

    async def list_sessions(
        self,
        user_id: str | None,
        agent_id: str | None = None,
        *,
        org_id: str | None = None,
        order: ListOrder = "newest",
    ) -> Listing[SessionRecord]:
        """Every session of the user (of one agent when ``agent_id`` is given).

        ``order``: ``"newest"`` (AgentScope's order: latest ``created_at`` first), ``"oldest"``, or
        ``"key"`` (store key order). A record that cannot be decoded (corrupt, or written by a newer
        version) does not stop the listing: it is left out, logged, and named in the result's
        ``problems`` (a list of :class:`~agentscope_teams.listing.Unreadable`: the session id, its
        key and the reason). The result is a ``list`` of the readable records. :meth:`get_session`
        of that session raises.
        """
        found = await self._scan(sessions_prefix(org_id, user_id, agent_id))
        return Listing(ordered(found, order), found.problems)

    async def list_sessions_by_schedule(
        self, user_id: str | None, schedule_id: str, *, org_id: str | None = None
    ) -> Listing[SessionRecord]:
        """The user's sessions a schedule opened (``ScheduleOrigin``), newest first."""
        found = await self._scan(sessions_prefix(org_id, user_id))
        return Listing(ordered(by_schedule(found, schedule_id), "newest"), found.problems)

    async def list_sessions_by_channel(
        self, user_id: str | None, channel_id: str, *, org_id: str | None = None
    ) -> Listing[SessionRecord]:
        """The user's sessions a channel opened (``ChannelOrigin``), newest first."""
        found = await self._scan(sessions_prefix(org_id, user_id))
        return Listing(ordered(by_channel(found, channel_id), "newest"), found.problems)

    async def set_session_team_id(
        self,
        user_id: str | None,
        session_id: str,
        team_id: str | None,
        *,
        agent_id: str | None = None,
        org_id: str | None = None,
    ) -> None:
        """Set (or clear with ``None``) the team the session belongs to.

        A no-op if the session does not exist or already has ``team_id``. Without ``agent_id`` the
        session is looked up among all the user's agents (AgentScope's signature has no agent).
        """
        for addr in await self._addresses(org_id, user_id, agent_id, session_id):
            while True:
                loaded = await self._load(addr.key)
                if loaded is None or loaded[1].team_id == team_id:
                    break
                version, old = loaded
                body = old.model_copy(update={"team_id": team_id, "updated_at": utcnow()})
                try:
                    await self._write(addr.key, body, version, None)
                    break
                except VersionConflict:
                    continue  # another writer got there first: re-read and apply again

    async def _addresses(
        self, org_id: str | None, user_id: str | None, agent_id: str | None, session_id: str
    ) -> list[SessionAddress]:
        if agent_id is not None:
            return [SessionAddress(org_id, user_id, agent_id, session_id)]
        keys = await self._keys(sessions_prefix(org_id, user_id))
        return [a for a in map(SessionAddress.parse, keys) if a.session_id == session_id]

    async def _pages(self, prefix: Key) -> AsyncIterator[list[Key]]:
        """The session keys under ``prefix`` in key order, one store page at a time."""
        after: Key | None = None
        while True:
            page = await self.store.list_keys(prefix, limit=_PAGE, after=after)
            yield [k for k in page if SESSION.match(k) is not None]
            if len(page) < _PAGE:
                return
            after = page[-1]

    async def _keys(self, prefix: Key) -> list[Key]:
        return [key async for page in self._pages(prefix) for key in page]

    async def _scan(self, prefix: Key) -> Listing[SessionRecord]:
        """Every readable record under ``prefix`` in key order, the unreadable ones as problems.

        One ``get_many`` per page of keys (one round trip where the store has it): ``prefix`` is
        one user's, so every key is in that user's key group.
        """
        records: list[SessionRecord] = []
        problems: list[Unreadable] = []
        async for keys in self._pages(prefix):
            for key, entry in zip(keys, await get_many(self.store, keys), strict=True):
                addr = SessionAddress.parse(key)
                try:
                    loaded = await self._read(addr.key, entry)
                except UNREADABLE as exc:
                    problems.append(unreadable("session", addr.session_id, addr.key, exc))
                    continue
                if loaded is not None:
                    records.append(self._record(addr, *loaded))
        return Listing(records, problems)

    async def import_at(
        self, addr: SessionAddress, body: SessionBody, *, dry_run: bool = False
    ) -> ImportOutcome:
        """Write a converted record as is (timestamps included) unless the stored one equals it.

        Returns ``"created"``, ``"updated"`` or ``"unchanged"`` (nothing written, so importing the
        same data twice leaves every version as it was); ``dry_run`` says which without writing.
        """
        bind_state(body.state, addr.session_id)
        body = body.model_copy(update={"config": copy_config(body.config)})  # the caller keeps its
        while True:
            loaded = await self._load(addr.key)
            if loaded is not None and same_body(loaded[1], body):
                return "unchanged"
            if dry_run:
                return "created" if loaded is None else "updated"
            try:
                if loaded is None:
                    await self._create(addr.key, body, None)
                else:
                    await self._write(addr.key, body, loaded[0], None)
            except VersionConflict:
                continue
            return "created" if loaded is None else "updated"

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
        """:meth:`delete_session` by address: the record becomes a tombstone (module docs)."""
        key = addr.key
        self._seen.pop(key, None)
        while True:
            entry = await self.store.get(key)
            found = 0 if entry is None or entry.value == TOMBSTONE else entry.version
            if expected_version is not None and found != expected_version:
                raise VersionConflict(key, expected_version, found)
            if entry is None or not found:
                return False
            try:
                await self._bury(key, entry)
            except VersionConflict:
                if expected_version is not None:
                    raise
                continue  # written meanwhile: delete what is there now
            self._seen.pop(key, None)
            return True

    async def _bury(self, key: Key, entry: Entry) -> None:
        """Replace the record ``entry`` (at its version) with the tombstone; a segmented record's
        segments go with it. A head that cannot be read is deleted outright."""
        if self._fields is None or not entry.value.startswith(HEAD_MARK):
            await self.store.put(key, TOMBSTONE, expected_version=entry.version, ttl=self.ttl)
            return
        try:
            head = self._head(key, entry.value)
        except SchemaVersionError:
            await self.store.delete(key, expected_version=entry.version)
            return
        drop = list(dict.fromkeys(field_of(sid) for sid, _ in head.segments))
        await self._fields.put_fields(
            key, TOMBSTONE, expected_version=entry.version, fields=(), drop=drop, ttl=self.ttl
        )
