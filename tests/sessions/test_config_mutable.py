"""``SessionConfig`` is mutable as AgentScope's is, and the storage's record cache stays safe:
changing a config after ``upsert_session`` or ``get_session`` never changes what the store or
the cache hold; only a new ``upsert_session`` does."""

from __future__ import annotations

from agentscope_teams.keys import SessionAddress
from agentscope_teams.sessions import SessionConfig, SessionStorage
from agentscope_teams.sessions.config import ChatModelConfig, copy_config
from agentscope_teams.sessions.origins import UserOrigin
from agentscope_teams.sessions.records import new_body
from agentscope_teams.state import AgentState
from agentscope_teams.store.memory import InMemoryStore


async def _stored(store: InMemoryStore, session_id: str) -> SessionConfig:
    """The config as a fresh storage (no cache) reads it from the store."""
    record = await SessionStorage(store).get_session("alice", "helper", session_id)
    assert record is not None
    return record.config


async def test_agentscope_style_config_set_before_upsert() -> None:
    # AgentScope's own session test: build a config, set a field, then upsert.
    async with InMemoryStore() as store:
        storage = SessionStorage(store)
        config = SessionConfig()
        config.name = "my chat"
        config.metadata["topic"] = "billing"
        record = await storage.upsert_session("alice", "helper", config, session_id="s1")
        assert record.config.name == "my chat"
        assert (await _stored(store, "s1")).metadata == {"topic": "billing"}


async def test_mutating_after_upsert_changes_neither_cache_nor_store() -> None:
    async with InMemoryStore() as store:
        storage = SessionStorage(store)
        config = SessionConfig(name="first", metadata={"tags": ["a"]})
        returned = await storage.upsert_session("alice", "helper", config, session_id="s1")
        config.name = "changed by the caller"
        config.metadata["tags"].append("b")
        returned.config.name = "changed through the returned record"
        returned.config.naming.auto = True
        # update_session_state rewrites the record from the storage's cache of it.
        await storage.update_session_state("alice", "helper", "s1", AgentState(session_id="s1"))
        stored = await _stored(store, "s1")
        assert stored == SessionConfig(name="first", metadata={"tags": ["a"]})


async def test_mutating_a_loaded_config_changes_nothing_until_upserted() -> None:
    async with InMemoryStore() as store:
        storage = SessionStorage(store)
        await storage.upsert_session("alice", "helper", SessionConfig(name="x"), session_id="s1")
        loaded = await storage.get_session("alice", "helper", "s1")
        assert loaded is not None
        loaded.config.name = "renamed"
        loaded.config.metadata["k"] = "v"
        await storage.update_session_state("alice", "helper", "s1", AgentState(session_id="s1"))
        again = await storage.get_session("alice", "helper", "s1")
        assert again is not None and again.config == SessionConfig(name="x")
        assert await _stored(store, "s1") == SessionConfig(name="x")
        # Upserting the changed config is how a change is made; it counts as a new config version.
        updated = await storage.upsert_session("alice", "helper", loaded.config, session_id="s1")
        assert updated.config_version == 2
        assert (await _stored(store, "s1")).name == "renamed"


async def test_mutating_an_imported_body_config_changes_neither_cache_nor_store() -> None:
    async with InMemoryStore() as store:
        storage = SessionStorage(store)
        model = ChatModelConfig(type="openai", credential_id="c1", model="m", parameters={"t": [1]})
        config = SessionConfig(name="imported", chat_model_config=model)
        body = new_body(None, AgentState(session_id="s1"), UserOrigin())
        body.config = config  # as a converter builds it: the importer's own config object
        addr = SessionAddress(None, "alice", "helper", "s1")
        assert await storage.import_at(addr, body) == "created"
        body.config.name = "changed by the importer"
        assert body.config.chat_model_config is not None
        body.config.chat_model_config.parameters["t"].append(2)
        await storage.update_session_state("alice", "helper", "s1", AgentState(session_id="s1"))
        stored = await _stored(store, "s1")
        kept = ChatModelConfig(type="openai", credential_id="c1", model="m", parameters={"t": [1]})
        assert stored == SessionConfig(name="imported", chat_model_config=kept)


def test_a_config_copy_is_equal_and_independent() -> None:
    model = ChatModelConfig(type="openai", credential_id="c1", model="m", parameters={"t": [1]})
    config = SessionConfig(workspace_id="w", metadata={"a": {"b": [1]}}, chat_model_config=model)
    copy = copy_config(config)
    assert copy == config
    copy.metadata["a"]["b"].append(2)
    copy.naming.auto = True
    assert copy.chat_model_config is not None
    copy.chat_model_config.parameters["t"].append(2)
    assert config.metadata == {"a": {"b": [1]}} and not config.naming.auto
    assert model.parameters == {"t": [1]}
