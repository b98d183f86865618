"""SessionStorage's addressed methods: the seed's methods and the ``*_at`` ones see the same records."""

from __future__ import annotations

import pytest

from agentscope_teams import AgentState, RuntimeContext, UserMsg
from agentscope_teams.errors import VersionConflict
from agentscope_teams.keys import SessionAddress
from agentscope_teams.sessions import SessionConfig, SessionSource, SessionStorage
from agentscope_teams.store import InMemoryStore

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
ADDR = SessionAddress.of(CTX, "lead")


async def test_create_update_get_delete_at_an_address() -> None:
    storage = SessionStorage(InMemoryStore())
    created = await storage.create_at(
        ADDR, config=SessionConfig(model="m"), state=AgentState(), source=SessionSource.API
    )
    assert (created.org_id, created.user_id, created.agent_id, created.session_id) == (
        "acme",
        "alice",
        "lead",
        "s1",
    )
    assert created.version == 1 and created.state.session_id == "s1"
    with pytest.raises(VersionConflict):
        await storage.create_at(ADDR)
    state = created.state
    state.context.append(UserMsg("hi"))
    assert await storage.update_at(ADDR, state) == 2
    with pytest.raises(VersionConflict):
        await storage.update_at(ADDR, state, expected_version=1)
    seed = await storage.get_session("alice", "lead", "s1", org_id="acme")
    assert seed == await storage.get_at(ADDR)
    assert seed is not None and seed.version == 2 and seed.source is SessionSource.API
    assert [r.session_id for r in await storage.list_sessions("alice", org_id="acme")] == ["s1"]
    assert await storage.delete_at(ADDR)
    assert await storage.get_at(ADDR) is None
    assert await storage.get_session("alice", "lead", "s1", org_id="acme") is None


async def test_update_at_a_missing_session_is_a_key_error() -> None:
    storage = SessionStorage(InMemoryStore())
    with pytest.raises(KeyError, match="create it with upsert_session first"):
        await storage.update_at(ADDR, AgentState())
    record = await storage.upsert_at(ADDR, state=AgentState())
    assert record.version == 1
    assert await storage.upsert_session(
        user_id="alice", agent_id="lead", session_id="s1", org_id="acme"
    ) == await storage.get_at(ADDR)


async def test_insert_at_stores_what_create_at_stores_and_returns_the_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent's new session: the same stored record as ``create_at`` with a config naming the
    model, and no record built nor config copied for the caller (it needs the version only)."""
    from agentscope_teams.sessions import records, storage

    made: list[str] = []
    monkeypatch.setattr(storage, "SessionRecord", lambda **kw: made.append("record"))
    monkeypatch.setattr(records, "copy_config", lambda c: made.append("copy"))
    store = InMemoryStore()
    inserted, created = SessionStorage(store), SessionStorage(store)
    other = SessionAddress.of(CTX.with_session("s2"), "lead")
    state = AgentState()
    state.context.append(UserMsg("hi"))
    assert await inserted.insert_at(ADDR, state, model="m", source=SessionSource.API) == 1
    assert made == []
    with pytest.raises(VersionConflict):
        await inserted.insert_at(ADDR, AgentState(), model="m")
    monkeypatch.undo()
    twin = AgentState()
    twin.context.append(state.context[0])
    await created.create_at(
        other, config=SessionConfig(model="m"), state=twin, source=SessionSource.API
    )
    a, b = await SessionStorage(store).get_at(ADDR), await SessionStorage(store).get_at(other)
    assert a is not None and b is not None and state.session_id == "s1"
    fields = ("version", "config", "source", "origin", "team_id", "config_version")
    assert [getattr(a, f) for f in fields] == [getattr(b, f) for f in fields]
    assert a.config.model == "m" and a.state.context == b.state.context


async def test_remembered_sessions_with_equal_configs_share_one_and_keep_their_own_data() -> None:
    """The storage remembers each session's body (without state) to write it back in one round
    trip; sessions with an equal config and origin (an agent's sessions) share one of each, so
    each remembered session holds fewer objects. Each still writes back its own config."""
    storage = SessionStorage(InMemoryStore())
    addrs = [SessionAddress.of(CTX.with_session(f"s{i}"), "lead") for i in range(4)]
    for addr, model in zip(addrs, ["m", "m", "other", "m"], strict=True):
        await storage.insert_at(addr, AgentState(), model=model)
    kept = [storage._seen[a.key][1] for a in addrs]
    assert kept[0].config is kept[1].config and kept[0].origin is kept[1].origin
    assert kept[2].config is not kept[1].config and kept[2].config.model == "other"
    assert kept[3].config is not kept[2].config and kept[3].config == kept[0].config
    for addr in addrs:
        record = await storage.get_at(addr)
        assert record is not None
        assert await storage.update_at(addr, record.state) == 2
    fresh = SessionStorage(storage.store)
    models = [(r.config.model if (r := await fresh.get_at(a)) else None) for a in addrs]
    assert models == ["m", "m", "other", "m"]
