"""Redis commands per call, counted deterministically (issue 14: the lease folded into the write).

A one-step call on an existing session is: lease acquire with the session read (1 script, issue 26),
and the save fenced by the lease that also releases it (1). A new session's call is the same two (the
save creates).
Commands are counted by wrapping the client's ``execute_command``, through which every command and
script call (``EVALSHA``) goes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.agent import ReActConfig
from agentscope_teams.keys import SessionAddress
from agentscope_teams.store import RedisStore
from agentscope_teams.tools import tool

#: Targets of issue 14 (then 5 for an existing session, 7 with a new one), 3 until issue 26.
EXISTING_SESSION_MAX = 2
NEW_SESSION_MAX = 2


class Counted:
    """Counts the commands a Redis client sends (name of each, in order) while ``on``."""

    def __init__(self, client: Any) -> None:
        self.sent: list[str] = []
        self.on = False
        inner = client.execute_command

        async def execute_command(*args: Any, **kw: Any) -> Any:
            if self.on:
                self.sent.append(str(args[0]))
            return await inner(*args, **kw)

        client.execute_command = execute_command

    def take(self) -> list[str]:
        sent, self.sent = self.sent, []
        return sent


def agent(store: RedisStore, workspace: Path) -> HarnessAgent:
    return HarnessAgent(
        "counted",
        ScriptedModel(lambda request: "echo: " + request.messages[-1].get_text_content()),
        workspace=workspace,
        store=store,
        builtin_tools=False,
        config=ReActConfig(stream_model=False),
    )


async def test_a_one_step_call_sends_two_redis_commands(
    redis_store: RedisStore, tmp_path: Path
) -> None:
    counted = Counted(redis_store._client)
    bot = agent(redis_store, tmp_path)
    ctx = RuntimeContext(session_id="s1", user_id="u1", org_id="o1")
    counted.on = True

    first = await bot.call("hello", ctx)
    new_session = counted.take()
    second = await bot.call("again", ctx)
    existing_session = counted.take()

    assert first.get_text_content() == "echo: hello"
    assert second.get_text_content() == "echo: again"
    print(f"redis commands per call: new session {new_session}, existing {existing_session}")
    assert len(new_session) <= NEW_SESSION_MAX, new_session
    assert len(existing_session) <= EXISTING_SESSION_MAX, existing_session
    # What the two are: lease create reading the session, fenced save with release (scripts).
    assert existing_session == ["EVALSHA", "EVALSHA"]
    assert new_session == ["EVALSHA", "EVALSHA"]
    addr = SessionAddress.of(ctx, "counted")
    assert await redis_store.get(addr.lease_key) is None  # released by the save itself
    record = await bot.sessions.get_at(addr)
    assert record is not None and record.version == 2 and len(record.state.context) == 4


async def test_a_failed_call_still_releases_its_lease(
    redis_store: RedisStore, tmp_path: Path
) -> None:
    def broken(request: Any) -> str:
        raise RuntimeError("model down")

    bot = HarnessAgent(
        "counted", ScriptedModel(broken), workspace=tmp_path, store=redis_store,
        builtin_tools=False, config=ReActConfig(stream_model=False),
    )  # fmt: skip
    ctx = RuntimeContext(session_id="s2", user_id="u1", org_id="o1")
    with pytest.raises(Exception, match="model down"):
        await bot.call("hello", ctx)
    assert await redis_store.get(SessionAddress.of(ctx, "counted").lease_key) is None


async def test_a_step_of_read_only_or_idempotent_calls_is_not_saved_before_its_tools(
    redis_store: RedisStore, tmp_path: Path
) -> None:
    """A step that calls only read-only or idempotent tools runs them before any save (a crash
    there only has the model call them again): one save fewer per such step. A step calling a
    tool with other effects is saved first, so a crash during it leaves the call recorded."""
    seen: dict[str, int] = {}

    async def saved_messages() -> int:
        record = await bot.sessions.get_at(SessionAddress.of(ctx, "counted"))
        return 0 if record is None else len(record.state.context)

    @tool(read_only=True)
    async def peek() -> str:
        """Look."""
        seen["peek"] = await saved_messages()
        return "seen"

    @tool(idempotent=True)
    async def mark() -> str:
        """Mark (again: the same mark)."""
        seen["mark"] = await saved_messages()
        return "marked"

    @tool
    async def poke() -> str:
        """Change something."""
        seen["poke"] = await saved_messages()
        return "poked"

    model = ScriptedModel(
        [
            ScriptedModel.tool_calls([("peek", {}), ("mark", {})]),
            ScriptedModel.tool_call("poke", {}),
            "done",
        ]
    )
    bot = HarnessAgent(
        "counted", model, workspace=tmp_path, store=redis_store, tools=[peek, mark, poke],
        builtin_tools=False, config=ReActConfig(stream_model=False),
    )  # fmt: skip
    ctx = RuntimeContext(session_id="s3", user_id="u1", org_id="o1")
    counted = Counted(redis_store._client)
    counted.on = True
    assert (await bot.call("go", ctx)).get_text_content() == "done"
    # nothing saved before the first step's tools; the second step saved with its call in it
    # (the prompt, the first step's call and results, the second step's call)
    assert seen == {"peek": 0, "mark": 0, "poke": 4}
    sent = counted.take()
    # lease with load, the save before poke (creates), then the last save; plus the tools' reads
    assert sent.count("EVALSHA") == 3, sent


async def test_a_read_only_step_after_one_with_effects_is_saved_before_its_tools(
    redis_store: RedisStore, tmp_path: Path
) -> None:
    """The results of calls with effects are saved before the next step's tools run, even when
    that step only reads (a long wait, say): a crash during it does not lose them."""
    seen: dict[str, int] = {}

    async def saved_messages() -> int:
        record = await bot.sessions.get_at(SessionAddress.of(ctx, "counted"))
        return 0 if record is None else len(record.state.context)

    @tool
    async def poke() -> str:
        """Change something."""
        seen["poke"] = await saved_messages()
        return "poked"

    @tool(read_only=True)
    async def wait() -> str:
        """Wait for something."""
        seen["wait"] = await saved_messages()
        return "waited"

    model = ScriptedModel(
        [ScriptedModel.tool_call("poke", {}), ScriptedModel.tool_call("wait", {}), "done"]
    )
    bot = HarnessAgent(
        "counted", model, workspace=tmp_path, store=redis_store, tools=[poke, wait],
        builtin_tools=False, config=ReActConfig(stream_model=False),
    )  # fmt: skip
    ctx = RuntimeContext(session_id="s4", user_id="u1", org_id="o1")
    assert (await bot.call("go", ctx)).get_text_content() == "done"
    # poke's step saved with its call (2 messages); wait's step with poke's result in it (4)
    assert seen == {"poke": 2, "wait": 4}
