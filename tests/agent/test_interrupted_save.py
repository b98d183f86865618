"""A save whose write landed but whose caller was cancelled before it heard back.

The checkpoint write reaches the store, then the call is cancelled (Ctrl-C during ``review``: a
member's call is cancelled natively by its runtime, and asyncio cancels every task left at
shutdown). The save after the cancellation must not trip over the agent's own write: no
"could not save session" warning, the final state is stored, and the session resumes.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store import InMemoryStore
from agentscope_teams.store.base import Key
from agentscope_teams.store.jsonfile import JsonFileStore
from agentscope_teams.tools import tool

from .helpers import orphans, results_of

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")


class Interrupting:
    """Mixin: the ``nth`` session write reaches the store, then hangs until the caller is cancelled."""

    nth = 0
    writes = 0
    landed: anyio.Event

    async def put(self, key: Key, value: bytes, **kw: Any) -> int:
        version: int = await super().put(key, value, **kw)  # type: ignore[misc]
        if key[0] == "sessions":
            self.writes += 1
            if self.writes == self.nth:
                self.landed.set()
                await anyio.sleep_forever()  # the answer never reaches the caller
        return version


class MemoryStore(Interrupting, InMemoryStore):
    pass


class FileStore(Interrupting, JsonFileStore):
    pass


@tool
def note(text: str) -> str:
    """Write a note.

    Args:
        text: The note.
    """
    return f"noted {text}"


def agent_on(store: Any, tmp_path: Path, model: ScriptedModel) -> HarnessAgent:
    return HarnessAgent(
        "lead", model, "sys", workspace=tmp_path / "ws", store=store, tools=[note], busy_timeout=0
    )


async def cancel_when_landed(
    agent: HarnessAgent, store: Interrupting, how: Literal["anyio", "native"]
) -> None:
    """Run one call and cancel it once the interrupted write has landed."""
    if how == "anyio":
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.call, "go", CTX)
            with anyio.fail_after(30):
                await store.landed.wait()
            tg.cancel_scope.cancel()
        return
    task = asyncio.get_running_loop().create_task(agent.call("go", CTX))  # as TeamRuntime does
    with anyio.fail_after(30):
        await store.landed.wait()
    task.cancel()
    await asyncio.wait({task})
    assert task.cancelled()


@pytest.mark.parametrize("how", ["anyio", "native"])
@pytest.mark.parametrize("nth", [1, 2], ids=["create", "update"])
@pytest.mark.parametrize("backend", ["memory", "file"])
async def test_a_cancelled_save_that_landed_is_saved_again_cleanly(
    backend: str,
    nth: int,
    how: Literal["anyio", "native"],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store: Interrupting = MemoryStore() if backend == "memory" else FileStore(tmp_path / "store")
    store.nth, store.landed = nth, anyio.Event()
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("note", {"text": "a"}, id="n1"),
            ScriptedModel.tool_call("note", {"text": "b"}, id="n2"),
            "resumed",
        ]
    )
    agent = agent_on(store, tmp_path, model)

    with caplog.at_level(logging.WARNING):
        await cancel_when_landed(agent, store, how)

    assert not [r for r in caplog.records if "could not save" in r.getMessage()], caplog.text
    saved = await agent.get_agent_state(CTX)
    assert f"n{nth}" in results_of(saved.context)  # the state after the interrupted step is kept
    store.nth = 0
    final = await agent.call("go on", CTX)  # busy_timeout=0: the session was released
    assert final.get_text_content() == "resumed"
    assert orphans(model.requests[-1].messages) == ([], [])


async def test_a_write_by_somebody_else_after_the_cut_is_not_overwritten(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = MemoryStore()
    store.nth, store.landed = 1, anyio.Event()
    model = ScriptedModel([ScriptedModel.tool_call("note", {"text": "a"}, id="n1"), "late"])
    agent = agent_on(store, tmp_path, model)
    addr = agent.address(CTX)

    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.call, "go", CTX)
        with anyio.fail_after(30):
            await store.landed.wait()
        other = (await agent.get_agent_state(CTX)).model_copy(update={"summary": "theirs"})
        await agent.sessions.update_at(addr, other)  # another writer, after our write landed
        tg.cancel_scope.cancel()

    assert (await agent.get_agent_state(CTX)).summary == "theirs"
    assert "version conflict" in caplog.text  # reported, not overwritten
