"""Redis commands of a one-step call of a ``HarnessAgent`` with specs (issue 14), counted.

The subagent and team lead extensions acknowledge in ``after_save`` what they injected, so when a
call injected something its last save keeps the lease and the release follows the acknowledgement
(at-least-once delivery); when it injected nothing, the last save releases the lease itself.
"""

from __future__ import annotations

from pathlib import Path

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.agent import ReActConfig
from agentscope_teams.keys import SessionAddress
from agentscope_teams.store import RedisStore
from agentscope_teams.subagents import RunBook
from agentscope_teams.subagents.inbox import INBOX_META, Notice

from ..agent.conftest import redis_store as redis_store  # the fixture
from ..agent.test_call_commands import Counted
from .helpers import spec

#: Lease create with the session read, inbox cursor read, inbox stream read, fenced save with
#: release (before: 7, the separate lease delete and an acknowledgement read of an unchanged
#: cursor; 5 until issue 26 read the session with the lease).
WITH_SPECS_EXISTING_SESSION = 4

CTX = RuntimeContext(session_id="s1", user_id="u1", org_id="o1")


def lead(store: RedisStore, workspace: Path) -> HarnessAgent:
    return HarnessAgent(
        "lead",
        ScriptedModel(lambda request: "echo: " + request.messages[-1].get_text_content()),
        workspace=workspace,
        store=store,
        builtin_tools=False,
        config=ReActConfig(stream_model=False),
        specs=[spec("helper")],
    )


async def test_a_one_step_call_with_specs_releases_in_the_save(
    redis_store: RedisStore, tmp_path: Path
) -> None:
    counted = Counted(redis_store._client)
    bot = lead(redis_store, tmp_path)
    await bot.call("hello", CTX)
    counted.on = True
    reply = await bot.call("again", CTX)
    sent = counted.take()
    counted.on = False

    assert reply.get_text_content() == "echo: again"
    print(f"redis commands, one-step call with specs, existing session: {sent}")
    assert len(sent) == WITH_SPECS_EXISTING_SESSION, sent
    assert sent == ["EVALSHA", "HMGET", "XRANGE", "EVALSHA"]
    addr = SessionAddress.of(CTX, "lead")
    assert await redis_store.get(addr.lease_key) is None  # released by the save itself


async def test_a_notice_injected_is_acknowledged_before_the_release(
    redis_store: RedisStore, tmp_path: Path
) -> None:
    counted = Counted(redis_store._client)
    bot = lead(redis_store, tmp_path)
    await bot.call("hello", CTX)
    inbox = RunBook.for_ctx(redis_store, CTX).inbox("lead")
    seq = await inbox.post(Notice(id="r-1:completed", run_id="r-1", text="result of r-1"))
    counted.on = True
    await bot.call("again", CTX)
    sent = counted.take()
    counted.on = False

    addr = SessionAddress.of(CTX, "lead")
    record = await bot.sessions.get_at(addr)
    assert record is not None
    assert [m.metadata.get(INBOX_META) for m in record.state.context].count("r-1:completed") == 1
    assert await inbox.cursor() == seq  # acknowledged
    assert await redis_store.get(addr.lease_key) is None  # and released after that
    # The save kept the lease: acknowledgement (read + CAS write), then a separate release.
    assert len(sent) > WITH_SPECS_EXISTING_SESSION, sent

    counted.on = True
    await bot.call("once more", CTX)  # nothing new: the save releases again, nothing re-injected
    again = counted.take()
    counted.on = False
    assert len(again) == WITH_SPECS_EXISTING_SESSION, again
    record = await bot.sessions.get_at(addr)
    assert record is not None
    assert [m.metadata.get(INBOX_META) for m in record.state.context].count("r-1:completed") == 1


def test_extensions_that_do_not_answer_keep_the_lease_after_the_save() -> None:
    from typing import Any, cast

    from agentscope_teams.agent.extension import Extension

    class Acks(Extension):
        async def after_save(self, scope: Any) -> None:
            return None

    class Ends(Extension):
        async def on_reply_end(self, scope: Any, final: Any) -> None:
            return None

    scope = cast(Any, None)
    assert not Extension().works_after_save(scope)
    assert Acks().works_after_save(scope) and Ends().works_after_save(scope)
