"""The session API called exactly as AgentScope 2.0.11's documentation and the seed do, on every
backend: positional and keyword arguments, ``record.id``, ``workspace_id``, team ids, origins and
schedule look-ups, newest-first listing, config changes, the missing-session ``KeyError``."""

from __future__ import annotations

import json

import pytest

from agentscope_teams import AgentState, UserMsg
from agentscope_teams.errors import VersionConflict
from agentscope_teams.sessions import (
    ChannelOrigin,
    ChatModelConfig,
    ScheduleOrigin,
    SessionConfig,
    SessionSource,
    SessionStorage,
    UserOrigin,
    session_key,
)
from agentscope_teams.store import StoreBackend


async def test_seed_chat_turn_keywords(store: StoreBackend, ns: str) -> None:
    """The seed's ``chat_turn``: get, upsert on first turn, update_session_state after each."""
    storage = SessionStorage(store)

    async def chat_turn(content: str) -> None:
        record = await storage.get_session(ns, "a1", "s1")
        if record is None:
            state = AgentState()
            await storage.upsert_session(
                user_id=ns,
                agent_id="a1",
                config=SessionConfig(),
                state=state,
                session_id="s1",
                source=SessionSource.USER,
            )
        else:
            state = record.state
        state.context.append(UserMsg(content))
        await storage.update_session_state(user_id=ns, agent_id="a1", session_id="s1", state=state)

    await chat_turn("my name is Su")
    await chat_turn("what did I tell you?")
    record = await SessionStorage(store).get_session(ns, "a1", "s1")
    assert record is not None and record.id == "s1"
    assert [m.get_text_content() for m in record.state.context] == [
        "my name is Su",
        "what did I tell you?",
    ]


async def test_positional_calls_as_agentscope_tests_make_them(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    config = SessionConfig(
        workspace_id="ws-1",
        name="chat",
        cwd="src",
        chat_model_config=ChatModelConfig(
            type="openai", credential_id="c1", model="gpt-4o", parameters={}
        ),
    )
    created = await storage.upsert_session(ns, "agent-1", config)
    assert created.id == created.session_id and len(created.id) == 32
    assert created.origin == UserOrigin() and created.team_id is None

    fetched = await storage.get_session(ns, "agent-1", created.id)
    assert fetched is not None and fetched.config == config
    assert (fetched.config.workspace_id, fetched.config.workspace) == ("ws-1", "ws-1")
    assert fetched.config.chat_model_config is not None
    assert fetched.config.chat_model_config.model == "gpt-4o"

    state = AgentState()
    state.context.append(UserMsg("hello"))
    await storage.update_session_state(ns, "agent-1", created.id, state)
    updated = await storage.upsert_session(ns, "agent-1", config, None, created.id)
    assert [m.get_text_content() for m in updated.state.context] == ["hello"]

    with pytest.raises(KeyError):
        await storage.update_session_state(ns, "agent-1", "missing", AgentState())
    assert await storage.get_session(ns, "agent-1", "missing") is None
    assert await storage.delete_session(ns, "agent-1", created.id) is True
    assert await storage.delete_session(ns, "agent-1", created.id) is False


async def test_listing_is_newest_first_by_default(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    for sid in ("b", "c", "a"):  # created in this order; ids sort differently
        await storage.upsert_session(ns, "agent-1", SessionConfig(), session_id=sid)
    assert [r.id for r in await storage.list_sessions(ns, "agent-1")] == ["a", "c", "b"]
    assert [r.id for r in await storage.list_sessions(ns, "agent-1", order="oldest")] == [
        "b",
        "c",
        "a",
    ]
    assert [r.id for r in await storage.list_sessions(ns, "agent-1", order="key")] == [
        "a",
        "b",
        "c",
    ]
    with pytest.raises(ValueError, match="order="):
        await storage.list_sessions(ns, "agent-1", order="random")  # type: ignore[arg-type]


async def test_team_ids(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    record = await storage.upsert_session(ns, "leader", SessionConfig(), session_id="s")
    await storage.set_session_team_id(ns, "s", "team-1")  # AgentScope's call: no agent id
    found = await storage.get_session(ns, "leader", "s")
    assert found is not None and found.team_id == "team-1"
    assert found.version == record.version + 1
    await storage.set_session_team_id(ns, "s", "team-1")  # same value: nothing written
    again = await storage.get_session(ns, "leader", "s")
    assert again is not None and again.version == found.version
    await storage.upsert_session(ns, "leader", SessionConfig(name="renamed"), session_id="s")
    kept = await storage.get_session(ns, "leader", "s")
    assert kept is not None and kept.team_id == "team-1"  # upsert does not touch the team
    await storage.set_session_team_id(ns, "s", None, agent_id="leader")
    cleared = await storage.get_session(ns, "leader", "s")
    assert cleared is not None and cleared.team_id is None
    await storage.set_session_team_id(ns, "no-such-session", "team-1")  # a no-op, no error


async def test_origins_and_schedule_lookups(store: StoreBackend, ns: str) -> None:
    storage = SessionStorage(store)
    flat = await storage.upsert_session(
        ns, "a", SessionConfig(), source="schedule", source_schedule_id="daily", session_id="s1"
    )
    assert flat.origin == ScheduleOrigin(schedule_id="daily")
    assert (flat.source, flat.source_schedule_id) == (SessionSource.SCHEDULE, "daily")
    await storage.upsert_session(
        ns, "b", SessionConfig(), origin=ScheduleOrigin(schedule_id="daily"), session_id="s2"
    )
    await storage.upsert_session(
        ns, "a", SessionConfig(), origin=ScheduleOrigin(schedule_id="weekly"), session_id="s3"
    )
    channel = await storage.upsert_session(
        ns,
        "a",
        SessionConfig(),
        source="channel",
        source_channel_id="slack",
        source_chat_id="C1",
        source_chat_name="general",
        session_id="s4",
    )
    assert channel.origin == ChannelOrigin(channel_id="slack", chat_id="C1", chat_name="general")
    assert [r.id for r in await storage.list_sessions_by_schedule(ns, "daily")] == ["s2", "s1"]
    assert [r.id for r in await storage.list_sessions_by_channel(ns, "slack")] == ["s4"]
    loaded = await SessionStorage(store).get_session(ns, "a", "s1")
    assert loaded is not None and loaded.origin == ScheduleOrigin(schedule_id="daily")
    with pytest.raises(ValueError, match="source_schedule_id"):
        await storage.upsert_session(ns, "a", SessionConfig(), source="schedule")


async def test_config_change_is_versioned_and_stale_writers_refused(
    store: StoreBackend, ns: str
) -> None:
    storage = SessionStorage(store)
    first = await storage.upsert_session(ns, "a", SessionConfig(workspace_id="w1"), session_id="s")
    second = await storage.upsert_session(
        ns, "a", SessionConfig(workspace_id="w2"), session_id="s", expected_version=first.version
    )
    assert (second.config.workspace_id, second.config_version) == ("w2", 2)
    with pytest.raises(VersionConflict):
        await storage.upsert_session(
            ns,
            "a",
            SessionConfig(workspace_id="w3"),
            session_id="s",
            expected_version=first.version,
        )
    found = await storage.get_session(ns, "a", "s")
    assert found is not None and found.config.workspace_id == "w2"


async def test_version_1_records_still_load(store: StoreBackend, ns: str) -> None:
    """A record written before origins and teams (schema version 1) loads with their defaults."""
    body = {
        "schema_version": 1,
        "config": {"model": "scripted", "system_prompt": None, "workspace": "w", "metadata": {}},
        "state": json.loads(AgentState(session_id="old").model_dump_json()),
        "source": "subagent",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
    }
    await store.put(session_key(None, ns, "a", "old"), json.dumps(body).encode())
    storage = SessionStorage(store)
    record = await storage.get_session(ns, "a", "old")
    assert record is not None
    assert (record.source, record.origin.type, record.team_id) == ("subagent", "subagent", None)
    assert (record.config.workspace_id, record.config_version) == ("w", 1)
    state = record.state
    state.context.append(UserMsg("new turn"))
    await storage.update_session_state(ns, "a", "old", state)
    again = await SessionStorage(store).get_session(ns, "a", "old")
    assert again is not None and again.origin.type == "subagent"


async def test_redis_storage_as_the_seed_opens_it(ns: str) -> None:
    """``async with RedisStorage(host=..., port=...)`` and AgentScope's positional arguments."""
    from urllib.parse import urlsplit

    from agentscope_teams.sessions import RedisStorage

    from ..backends import REDIS_URL
    from ..conftest import require_service

    require_service("redis")
    parts = urlsplit(REDIS_URL)
    host, port, db = parts.hostname or "127.0.0.1", parts.port or 6379, int(parts.path[1:] or 0)
    async with RedisStorage(host, port, db, None, key_ttl=600) as storage:
        record = await storage.upsert_session(ns, "agent-1", SessionConfig(workspace_id="w"))
        await storage.update_session_state(ns, "agent-1", record.id, AgentState())
        assert [r.id for r in await storage.list_sessions(ns, "agent-1")] == [record.id]
        assert await storage.delete_session(ns, "agent-1", record.id) is True
    with pytest.raises(TypeError, match="key_config"):
        RedisStorage(host=host, port=port, key_config=object())
