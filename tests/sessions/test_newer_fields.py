"""A session saved by a newer release (a field this release does not know, in its config, its
origin, a permission rule of its state) still loads here, and what this release writes back keeps
those fields; a config or origin people write with an unknown field is still refused."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agentscope_teams import AgentState, RuntimeContext
from agentscope_teams.keys import SessionAddress
from agentscope_teams.sessions import SessionConfig, SessionStorage
from agentscope_teams.sessions.origins import ChannelOrigin
from agentscope_teams.state import PermissionRule
from agentscope_teams.store import InMemoryStore

CTX = RuntimeContext(session_id="s1", user_id="alice")
ADDR = SessionAddress.of(CTX, "lead")


async def test_a_session_with_a_newer_releases_fields_loads_and_keeps_them() -> None:
    store = InMemoryStore()
    state = AgentState()
    state.permission_context.rules.append(PermissionRule(tool="read_file", behavior="allow"))
    origin = ChannelOrigin(channel_id="c1", chat_id="chat", chat_name="Chat")
    await SessionStorage(store).create_at(
        ADDR, config=SessionConfig(model="m"), state=state, origin=origin
    )
    entry = await store.get(ADDR.key)
    assert entry is not None
    raw = json.loads(entry.value)
    raw["config"]["future_config"] = {"x": 1}
    raw["origin"]["future_origin"] = "o"
    raw["state"]["permission_context"]["rules"][0]["future_rule"] = True
    await store.put(ADDR.key, json.dumps(raw).encode(), expected_version=entry.version)

    storage = SessionStorage(store)  # a process of this release, reading it fresh
    found = await storage.get_at(ADDR)
    assert found is not None and found.config.model == "m"
    assert found.state.permission_context.rules[0].tool == "read_file"
    await storage.update_at(ADDR, found.state)  # this release writes the record back
    entry = await store.get(ADDR.key)
    assert entry is not None
    kept = json.loads(entry.value)
    assert kept["config"]["future_config"] == {"x": 1}
    assert kept["origin"]["future_origin"] == "o"
    assert kept["state"]["permission_context"]["rules"][0]["future_rule"] is True


def test_a_config_or_origin_people_write_with_an_unknown_field_is_refused() -> None:
    with pytest.raises(ValidationError, match="modle"):
        SessionConfig(modle="m")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="chanel_id"):
        ChannelOrigin(chanel_id="c1", chat_id="x")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="modle"):
        SessionConfig.model_validate({"modle": "m"})
