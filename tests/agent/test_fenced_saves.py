"""The session lease fences every save inside the store, on every backend sharing processes.

A call whose lease is taken over mid-call cannot save (``VersionConflict``, a ``LeaseLostError``)
and the winner can; a finished call leaves no lease key (the last save released it); a failed call
releases it too. The in-memory store is private to one process: it takes no lease at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.agent import ReActConfig
from agentscope_teams.errors import LeaseLostError, VersionConflict
from agentscope_teams.keys import SessionAddress
from agentscope_teams.store import StoreBackend
from agentscope_teams.store.base import shared_across_processes
from agentscope_teams.tools import tool

from .helpers import brain

CTX = RuntimeContext(session_id="s-fenced", user_id="u", org_id="o")
INTRUDER = json.dumps({"holder": "intruder"}).encode()


def build(store: StoreBackend, workspace: Path, name: str) -> HarnessAgent:
    addr = SessionAddress.of(CTX, name)

    @tool
    async def takeover() -> str:
        """Another caller takes the session's lease (as after an expiry)."""
        await store.put(addr.lease_key, INTRUDER, ttl=60, indexed=False)
        return "taken"

    return HarnessAgent(
        name,
        ScriptedModel(brain),
        workspace=workspace,
        store=store,
        tools=[takeover],
        builtin_tools=False,
        config=ReActConfig(stream_model=False),
    )


async def test_a_finished_call_leaves_no_lease_and_the_next_call_runs(
    store: StoreBackend, ns: str, tmp_path: Path
) -> None:
    agent = build(store, tmp_path, ns)
    addr = SessionAddress.of(CTX, ns)
    assert (await agent.call("one", CTX)).get_text_content() == "echo: one"
    assert await store.get(addr.lease_key) is None
    assert (await agent.call("two", CTX)).get_text_content() == "echo: two"
    assert await store.get(addr.lease_key) is None
    record = await agent.sessions.get_at(addr)
    assert record is not None and record.version == 2


async def test_a_holder_whose_lease_is_taken_mid_call_cannot_save(
    store: StoreBackend, ns: str, tmp_path: Path
) -> None:
    agent = build(store, tmp_path, ns)
    addr = SessionAddress.of(CTX, ns)
    await agent.call("first", CTX)
    if not shared_across_processes(store):
        pytest.skip("a process-private store takes no lease")
    with pytest.raises(VersionConflict) as info:
        await agent.call("use takeover {}", CTX)
    assert isinstance(info.value, LeaseLostError) and info.value.lease_key == addr.lease_key
    held = await store.get(addr.lease_key)
    assert held is not None and held.value == INTRUDER  # the stale holder did not release it
    record = await agent.sessions.get_at(addr)
    assert record is not None and record.version == 2  # the checkpoint before the tool ran
    texts = [m.get_text_content() for m in record.state.context]
    assert "done: taken" not in texts  # nothing written after the takeover
    assert [c.name for c in record.state.awaiting_tool_calls()] == ["takeover"]
    # The winner (the intruder's lease gone, as when it finishes) saves normally.
    assert await store.delete(addr.lease_key, indexed=False)
    assert (await agent.call("again", CTX)).get_text_content() == "echo: again"
    assert await store.get(addr.lease_key) is None


async def test_a_failed_call_releases_its_lease(
    store: StoreBackend, ns: str, tmp_path: Path
) -> None:
    def broken(request: Any) -> str:
        raise RuntimeError("model down")

    agent = build(store, tmp_path, ns)
    agent.loop.model = agent.model = ScriptedModel(broken)
    with pytest.raises(RuntimeError, match="model down"):
        await agent.call("hello", CTX)
    assert await store.get(SessionAddress.of(CTX, ns).lease_key) is None
