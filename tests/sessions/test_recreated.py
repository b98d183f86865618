"""A session deleted and created again is a new record: nothing of the old one writes onto it.

Store versions restart at 1 for a key that was deleted, so without more a process holding
version N of the old record (a caller's ``expected_version``, or the version a storage remembers
for its one-round-trip save) could write at N onto the new record once it reached N again
(ABA): a stale state accepted, and the old record's config and ``created_at`` put over the new
one's. A deleted session leaves a tombstone carrying its version, so the next creation goes on
from it and a version is never handed out twice for one session. A record that expires (or whose
tombstone expires) leaves nothing: there a storage stops trusting the version it remembers once
the record may have expired, and compares ``created_at`` when a caller's version matches again.
"""

from __future__ import annotations

from datetime import datetime

import anyio
import pytest

from agentscope_teams import AgentState, UserMsg
from agentscope_teams.errors import VersionConflict
from agentscope_teams.keys import SessionAddress
from agentscope_teams.sessions import SessionConfig, SessionStorage
from agentscope_teams.sessions.origins import origin_of
from agentscope_teams.sessions.records import HEAD_MARK, SegmentedHead, new_body
from agentscope_teams.sessions.segments import field_of
from agentscope_teams.store import StoreBackend
from agentscope_teams.store.base import field_records_of


async def _recreated(ns: str, store: StoreBackend) -> tuple[SessionAddress, SessionStorage, int]:
    """A session written twice by ``stale`` (which remembers it at its last version), then
    deleted and created again by another process, which saves it until it is at least at the
    version ``stale`` remembers. Returns the address, ``stale`` and that version."""
    addr = SessionAddress(None, ns, "agent", "s")
    stale = SessionStorage(store)
    first = await stale.create_at(addr, config=SessionConfig(model="old-model"))
    first.state.context.append(UserMsg("old conversation"))
    known = await stale.update_at(addr, first.state)
    other = SessionStorage(store)
    assert await other.delete_at(addr)
    again = await other.create_at(addr, config=SessionConfig(model="new-model"))
    version = again.version
    while version < known:
        again.state.context.append(UserMsg(f"new {version}"))
        version = await other.update_at(addr, again.state, expected_version=version)
    return addr, stale, known


async def test_a_stale_expected_version_does_not_write_onto_the_recreated_session(
    store: StoreBackend, ns: str
) -> None:
    addr, _, known = await _recreated(ns, store)
    before = await SessionStorage(store).get_at(addr)
    assert before is not None
    old_state = AgentState(session_id="s", context=[UserMsg("written for the old session")])
    with pytest.raises(VersionConflict):
        await SessionStorage(store).update_at(addr, old_state, expected_version=known)
    after = await SessionStorage(store).get_at(addr)
    assert after is not None and after.version == before.version
    assert after.state.context == before.state.context


async def test_a_remembered_version_does_not_bring_back_the_old_config_and_created_at(
    store: StoreBackend, ns: str
) -> None:
    addr, stale, _ = await _recreated(ns, store)
    before = await SessionStorage(store).get_at(addr)
    assert before is not None
    state = AgentState(session_id="s", context=[UserMsg("a save by the stale process")])
    await stale.update_at(addr, state)  # the seed's save: replace the state, keep the record
    after = await SessionStorage(store).get_at(addr)
    assert after is not None
    assert after.config.model == "new-model"
    assert after.created_at == before.created_at
    assert after.state.context == state.context


async def test_a_recreated_session_reads_and_lists_as_new(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    addr = SessionAddress(None, ns, "agent", "s")
    first = await storage.create_at(addr)
    assert first.version == 1
    assert await storage.delete_at(addr)
    assert await storage.get_at(addr) is None
    assert list(await storage.list_sessions(ns, "agent")) == []
    assert not await storage.delete_at(addr)  # deleting it again: nothing there
    with pytest.raises(KeyError):
        await storage.update_at(addr, AgentState(session_id="s"))
    again = await storage.create_at(addr, config=SessionConfig(model="m2"))
    assert again.version > first.version
    assert again.config.model == "m2" and again.config_version == 1
    listed = await storage.list_sessions(ns, "agent")
    assert [r.version for r in listed] == [again.version]
    with pytest.raises(VersionConflict):
        await storage.create_at(addr)  # it exists again: create-only refuses


async def test_a_deleted_segmented_session_keeps_none_of_its_segments(
    store: StoreBackend, ns: str
) -> None:
    fields = field_records_of(store)
    if fields is None:
        pytest.skip("only a store with fields beside a value (Redis) segments a record")
    storage = SessionStorage(store)
    addr = SessionAddress(None, ns, "agent", "s")
    record = await storage.create_at(addr)
    record.state.context.extend(UserMsg(f"message {i}") for i in range(40))
    await storage.update_at(addr, record.state)
    head = await store.get(addr.key)
    assert head is not None and head.value.startswith(HEAD_MARK)
    names = [field_of(sid) for sid, _ in SegmentedHead.model_validate_json(head.value).segments]
    assert names and all(d is not None for d in await fields.get_fields(addr.key, names))
    assert await storage.delete_at(addr)
    assert await fields.get_fields(addr.key, names) == [None] * len(names)


EXPIRY_DEADLINE = 20.0
SHORT_TTL = 0.5


async def _expired_and_recreated(
    ns: str, store: StoreBackend, *, deleted: bool = False
) -> tuple[SessionAddress, SessionStorage, int]:
    """As :func:`_recreated`, but the old record expires (the storage's ``ttl``), leaving no
    tombstone (``deleted``: it is deleted first, and its tombstone expires); another process
    creates the session again (a storage with a longer ttl, so the new record outlives the test)
    and saves it up to the remembered version."""
    addr = SessionAddress(None, ns, "agent", "s")
    stale = SessionStorage(store, ttl=SHORT_TTL)
    first = await stale.create_at(addr, config=SessionConfig(model="old-model"))
    first.state.context.append(UserMsg("old conversation"))
    known = await stale.update_at(addr, first.state)
    if deleted:
        assert await SessionStorage(store, ttl=SHORT_TTL).delete_at(addr)
    deadline = anyio.current_time() + EXPIRY_DEADLINE
    while await store.get(addr.key) is not None:
        assert anyio.current_time() < deadline, "the session record did not expire"
        await anyio.sleep(0.05)
    other = SessionStorage(store, ttl=60)
    again = await other.create_at(addr, config=SessionConfig(model="new-model"))
    version = again.version
    while version < known:
        again.state.context.append(UserMsg(f"new {version}"))
        version = await other.update_at(addr, again.state, expected_version=version)
    return addr, stale, known


@pytest.mark.parametrize("deleted", [False, True], ids=["expired", "tombstone-expired"])
async def test_a_remembered_version_does_not_write_the_expired_record_onto_a_new_one(
    store: StoreBackend, ns: str, deleted: bool
) -> None:
    """The seed's save (no ``expected_version``) by a process that remembers the expired record:
    it replaces the state of the record there now, and keeps that record's config and
    ``created_at`` (it used to write the expired record's, at the version it remembered)."""
    addr, stale, _ = await _expired_and_recreated(ns, store, deleted=deleted)
    before = await SessionStorage(store).get_at(addr)
    assert before is not None
    state = AgentState(session_id="s", context=[UserMsg("a save by the stale process")])
    await stale.update_at(addr, state)
    after = await SessionStorage(store).get_at(addr)
    assert after is not None
    assert after.config.model == "new-model"
    assert after.created_at == before.created_at
    assert after.state.context == state.context


async def test_a_stale_expected_version_does_not_write_onto_a_record_created_after_expiry(
    store: StoreBackend, ns: str
) -> None:
    """A caller's ``expected_version`` of the expired record, on the storage that saw it: a
    conflict, not a write onto the new record that reached the same version."""
    addr, stale, known = await _expired_and_recreated(ns, store)
    before = await SessionStorage(store).get_at(addr)
    assert before is not None and before.version == known
    old_state = AgentState(session_id="s", context=[UserMsg("written for the old session")])
    with pytest.raises(VersionConflict):
        await stale.update_at(addr, old_state, expected_version=known)
    after = await SessionStorage(store).get_at(addr)
    assert after is not None and after.version == before.version
    assert after.state.context == before.state.context


async def test_a_record_with_naive_times_is_remembered_as_utc(store: StoreBackend, ns: str) -> None:
    """A body imported with naive ``updated_at`` (no time zone) is read and saved with a ttl."""
    storage = SessionStorage(store, ttl=60)
    addr = SessionAddress(None, ns, "agent", "s")
    naive = datetime(2024, 1, 1, 12, 0)
    body = new_body(None, AgentState(session_id="s"), origin_of(None, None))
    body = body.model_copy(update={"created_at": naive, "updated_at": naive})
    assert await storage.import_at(addr, body) == "created"
    loaded = await storage.get_at(addr)
    assert loaded is not None and loaded.created_at.replace(tzinfo=None) == naive
    assert await storage.update_at(addr, AgentState(session_id="s")) == loaded.version + 1
