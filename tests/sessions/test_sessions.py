"""SessionStorage over every backend: the seed's flow, conflicts and isolation."""

from __future__ import annotations

import multiprocessing as mp

import anyio
import pytest

from agentscope_teams import AgentState, UserMsg
from agentscope_teams.errors import SchemaVersionError, VersionConflict
from agentscope_teams.sessions import (
    SessionConfig,
    SessionSource,
    SessionStorage,
    session_key,
)
from agentscope_teams.store import StoreBackend

from ..backends import StoreSpec


async def _turn(storage: SessionStorage, user: str, text: str) -> int:
    record = await storage.get_session(user, "agent", "s1")
    if record is None:
        state = AgentState()
        record = await storage.upsert_session(
            user_id=user,
            agent_id="agent",
            config=SessionConfig(model="scripted"),
            state=state,
            session_id="s1",
            source=SessionSource.USER,
        )
    state = record.state
    state.context.append(UserMsg(text))
    return await storage.update_session_state(
        user_id=user, agent_id="agent", session_id="s1", state=state
    )


def _second_turn(spec: StoreSpec, user: str) -> None:
    async def main() -> None:
        async with spec.open() as store:
            await _turn(SessionStorage(store), user, "what did I tell you?")

    anyio.run(main)


async def test_two_turns_across_processes(
    store_spec: StoreSpec, store: StoreBackend, ns: str
) -> None:
    storage = SessionStorage(store)
    await _turn(storage, ns, "my name is Su")
    if store_spec.backend != "memory":
        proc = mp.get_context("spawn").Process(target=_second_turn, args=(store_spec, ns))
        proc.start()
        proc.join(60)
        assert proc.exitcode == 0
    else:
        await _turn(SessionStorage(store), ns, "what did I tell you?")
    record = await SessionStorage(store).get_session(ns, "agent", "s1")
    assert record is not None
    assert [m.get_text_content() for m in record.state.context] == [
        "my name is Su",
        "what did I tell you?",
    ]
    assert record.state.session_id == "s1"
    assert record.config.model == "scripted"
    assert record.version == 3


async def test_update_absent_session_raises_key_error(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    with pytest.raises(KeyError, match="upsert_session"):
        await storage.update_session_state(
            user_id=ns, agent_id="a", session_id="nope", state=AgentState()
        )
    assert await storage.get_session(ns, "a", "nope") is None


async def test_stale_writer_gets_conflict(store: StoreBackend, ns: str) -> None:
    a, b = SessionStorage(store), SessionStorage(store)
    rec = await a.upsert_session(user_id=ns, agent_id="x", session_id="s", state=AgentState())
    v2 = await b.update_session_state(
        user_id=ns,
        agent_id="x",
        session_id="s",
        state=AgentState(summary="b"),
        expected_version=rec.version,
    )
    with pytest.raises(VersionConflict) as info:
        await a.update_session_state(
            user_id=ns,
            agent_id="x",
            session_id="s",
            state=AgentState(summary="a"),
            expected_version=rec.version,
        )
    assert info.value.found == v2
    loaded = await a.get_session(ns, "x", "s")
    assert loaded is not None and loaded.state.summary == "b"


async def test_unconditional_update_keeps_config_after_other_writer(
    store: StoreBackend, ns: str
) -> None:
    a, b = SessionStorage(store), SessionStorage(store)
    await a.upsert_session(
        user_id=ns, agent_id="x", session_id="s", config=SessionConfig(model="m1")
    )
    await b.update_session_state(user_id=ns, agent_id="x", session_id="s", state=AgentState())
    v = await a.update_session_state(
        user_id=ns, agent_id="x", session_id="s", state=AgentState(summary="last")
    )
    loaded = await b.get_session(ns, "x", "s")
    assert loaded is not None
    assert (loaded.version, loaded.config.model, loaded.state.summary) == (v, "m1", "last")


async def test_isolation_users_agents_orgs(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    cases = [
        dict(user_id=ns + "-alice", agent_id="lead", org_id=None),
        dict(user_id=ns + "-bob", agent_id="lead", org_id=None),
        dict(user_id=ns + "-alice", agent_id="helper", org_id=None),
        dict(user_id=ns + "-alice", agent_id="lead", org_id="acme"),
        dict(user_id=None, agent_id="lead", org_id=ns),
    ]
    for i, case in enumerate(cases):
        await storage.upsert_session(
            session_id="same", state=AgentState(summary=f"owner {i}"), **case
        )
    for i, case in enumerate(cases):
        rec = await storage.get_session(
            case["user_id"], str(case["agent_id"]), "same", org_id=case["org_id"]
        )
        assert rec is not None and rec.state.summary == f"owner {i}"
    alice = await storage.list_sessions(ns + "-alice")
    assert sorted(r.agent_id for r in alice) == ["helper", "lead"]
    assert [r.state.summary for r in await storage.list_sessions(ns + "-alice", "lead")] == [
        "owner 0"
    ]


async def test_hostile_ids_do_not_collide(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    await storage.upsert_session(
        user_id=ns + "a:b", agent_id="x", session_id="s", state=AgentState(summary="1")
    )
    await storage.upsert_session(
        user_id=ns + "a", agent_id="b:x", session_id="s", state=AgentState(summary="2")
    )
    one = await storage.get_session(ns + "a:b", "x", "s")
    two = await storage.get_session(ns + "a", "b:x", "s")
    assert one is not None and two is not None
    assert (one.state.summary, two.state.summary) == ("1", "2")
    assert session_key(None, "../x", "a", "s")[2] == "u:../x"


async def test_state_session_id_must_match(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    with pytest.raises(ValueError, match="belongs to one session"):
        await storage.upsert_session(
            user_id=ns, agent_id="a", session_id="s1", state=AgentState(session_id="other")
        )


async def test_new_session_id_generated_and_delete(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    rec = await storage.upsert_session(user_id=ns, agent_id="a")
    assert rec.session_id and rec.state.session_id == rec.session_id
    assert await storage.delete_session(ns, "a", rec.session_id) is True
    assert await storage.get_session(ns, "a", rec.session_id) is None
    assert await storage.delete_session(ns, "a", rec.session_id) is False


async def test_config_change_is_accepted_and_counted(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    first = await storage.upsert_session(
        user_id=ns, agent_id="a", session_id="s", config=SessionConfig(model="m")
    )
    state = first.state
    state.context.append(UserMsg("kept"))
    await storage.update_session_state(ns, "a", "s", state)
    changed = await storage.upsert_session(ns, "a", SessionConfig(model="other"), session_id="s")
    assert (changed.config.model, changed.config_version, changed.version) == ("other", 2, 3)
    assert [m.get_text_content() for m in changed.state.context] == ["kept"]  # state=None keeps it
    same = await storage.upsert_session(ns, "a", SessionConfig(model="other"), session_id="s")
    assert (same.config_version, same.version) == (2, 4)
    with pytest.raises(VersionConflict):  # a writer that read version 3 is still refused
        await storage.upsert_session(
            ns, "a", SessionConfig(model="third"), session_id="s", expected_version=3
        )
    loaded = await SessionStorage(store).get_session(ns, "a", "s")
    assert loaded is not None and loaded.config.model == "other"


async def test_newer_schema_version_is_refused(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    await storage.upsert_session(user_id=ns, agent_id="a", session_id="s")
    key = session_key(None, ns, "a", "s")
    entry = await store.get(key)
    assert entry is not None
    await store.put(key, entry.value.replace(b'"schema_version":1', b'"schema_version":99', 1))
    with pytest.raises(SchemaVersionError, match="upgrade"):
        await SessionStorage(store).get_session(ns, "a", "s")


def test_invalid_identifiers_name_the_field() -> None:
    with pytest.raises(ValueError, match="user_id"):
        session_key(None, " bad", "a", "s")
    with pytest.raises(ValueError, match="agent_id"):
        session_key(None, "u", "", "s")
    with pytest.raises(ValueError, match="session_id"):
        session_key(None, "u", "a", "x\x00")
