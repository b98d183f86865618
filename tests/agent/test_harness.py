"""HarnessAgent: configuration, the session API, persistence across processes, errors, cancellation."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.agent import CallScope, Extension, SessionAgent
from agentscope_teams.agent import hitl as hitl_mod
from agentscope_teams.agent.harness import DEFAULT_STORE_DIR
from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import ConfigurationError, ModelResponseError
from agentscope_teams.events import ReplyEndEvent, ReplyStartEvent
from agentscope_teams.message import Msg, UserMsg
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.store import BaseStore, InMemoryStore
from agentscope_teams.store.jsonfile import JsonFileStore
from agentscope_teams.tools import Tool, tool

from . import helpers
from .conftest import SetupFactory
from .helpers import StoreArgs, orphans, read_log, results_of

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")


def harness(store: BaseStore, model: ScriptedModel, tmp_path: Path, **kw: Any) -> HarnessAgent:
    log = tmp_path / "log.jsonl"
    kw.setdefault("tools", helpers.recording_tools(log))
    return HarnessAgent("lead", model, "sys", workspace=tmp_path / "ws", store=store, **kw)


# -- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"replicas": 2, "store": "memory://"},
        {"replicas": 2, "store": "file"},
        {"replicas": 2, "store": None},
        {"remote_workspace": True, "store": "file"},
        {"replicas": 0, "store": "memory://"},
        {"lease_ttl": 0, "store": "memory://"},
    ],
    ids=["replicas-memory", "replicas-file", "replicas-default", "remote-file", "zero", "ttl"],
)
def test_configurations_that_cannot_work_fail_at_construction(
    kwargs: dict[str, Any], tmp_path: Path
) -> None:
    if kwargs["store"] == "file":
        kwargs["store"] = JsonFileStore(tmp_path / "store")
    with pytest.raises(ConfigurationError):
        HarnessAgent("lead", ScriptedModel([]), workspace=tmp_path, **kwargs)


def test_a_store_that_is_not_one_is_named_before_any_deployment_check(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigurationError, match="'store' must be BaseStore or str or None, got dict"
    ):
        HarnessAgent("lead", ScriptedModel([]), workspace=tmp_path, store={}, replicas=2)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="store must implement BaseStore, got dict"):
        SessionAgent("lead", ScriptedModel([]), workspace=tmp_path, store={}, replicas=2)  # type: ignore[arg-type]


async def test_replicas_and_remote_workspace_work_with_redis(tmp_path: Path) -> None:
    pytest.importorskip("redis")
    from agentscope_teams.store.redis import RedisStore

    store = RedisStore("redis://127.0.0.1:6379/0")  # constructing connects to nothing
    agent = HarnessAgent(
        "lead",
        ScriptedModel([]),
        workspace=tmp_path,
        store=store,
        replicas=3,
        remote_workspace=True,
    )
    assert agent.store is store
    await store.aclose()


def test_the_default_store_is_the_file_store_in_the_home_directory(tmp_path: Path) -> None:
    agent = HarnessAgent("lead", ScriptedModel([]), workspace=tmp_path)
    assert isinstance(agent.store, JsonFileStore) and agent.store.root == DEFAULT_STORE_DIR


async def test_an_agent_closes_the_store_it_built_from_a_url(tmp_path: Path) -> None:
    async with HarnessAgent(
        "lead", ScriptedModel(helpers.brain), workspace=tmp_path, store=f"file://{tmp_path / 's'}"
    ) as agent:
        assert (await agent.call("hi", CTX)).get_text_content() == "echo: hi"
    assert (tmp_path / "s").is_dir()


# -- the session API ----------------------------------------------------------------------------


async def test_session_api_round_trip(tmp_path: Path) -> None:
    agent = harness(InMemoryStore(), ScriptedModel(helpers.brain), tmp_path)
    empty = await agent.get_agent_state(CTX)
    assert empty.context == [] and empty.session_id == "s1"
    assert await agent.list_sessions(CTX) == []

    await agent.call("first", CTX)
    await agent.call("second", CTX.with_session("s2"))
    other_user = RuntimeContext(session_id="s1", user_id="bob", org_id="acme")
    await agent.call("bob's", other_user)

    assert sorted(r.session_id for r in await agent.list_sessions(CTX)) == ["s1", "s2"]
    state = await agent.get_agent_state(CTX)
    assert helpers.transcript(state.context) == [("user", "first"), ("assistant", "echo: first")]

    await agent.clear_context(CTX)
    cleared = await agent.get_agent_state(CTX)
    assert cleared.context == [] and cleared.reply_id == ""

    assert await agent.delete_session(CTX) is True
    assert await agent.delete_session(CTX) is False
    assert [r.session_id for r in await agent.list_sessions(CTX)] == ["s2"]
    assert [r.session_id for r in await agent.list_sessions(other_user)] == ["s1"]


def fixed_script() -> list[ModelResponse | str]:
    return [
        ScriptedModel.tool_call("whoami", {}, id="w1", text="checking"),
        ScriptedModel.tool_call("slow", {"label": "x", "seconds": 0}, id="w2"),
        "finished",
    ]


async def test_call_and_stream_produce_the_same_final_state(tmp_path: Path) -> None:
    a = harness(InMemoryStore(), ScriptedModel(fixed_script()), tmp_path / "a")
    b = harness(InMemoryStore(), ScriptedModel(fixed_script()), tmp_path / "b")

    final = await a.call("go", CTX)
    events = [e async for e in b.stream("go", CTX)]

    assert isinstance(events[0], ReplyStartEvent) and isinstance(events[-1], ReplyEndEvent)
    assert sum(isinstance(e, ReplyEndEvent) for e in events) == 1
    assert events[-1].msg.get_text_content() == final.get_text_content() == "finished"
    types = [e.type for e in events]
    assert types.index("tool_call") < types.index("tool_result")
    assert types.count("model_call_start") == types.count("model_call_end") == 3
    sa, sb = await a.get_agent_state(CTX), await b.get_agent_state(CTX)
    dump: Any = {"exclude": {"id", "created_at", "metadata"}}
    assert [m.model_dump(**dump) for m in sa.context] == [m.model_dump(**dump) for m in sb.context]
    assert len(sa.context) == 6 and sa.cur_iter == sb.cur_iter == 3


class Recorder(Extension):
    """An extension that offers a tool, a prompt, one injected message, and records the hooks."""

    def __init__(self) -> None:
        self.saves = 0
        self.ended: list[str] = []
        self.injected = False

    def tools(self, scope: CallScope) -> list[Tool]:
        async def ping() -> str:
            """Answer pong."""
            return "pong"

        return [tool(ping)]

    def system_prompt(self, scope: CallScope) -> str:
        return "EXTENSION PROMPT"

    async def inject(self, scope: CallScope) -> list[Msg]:
        if self.injected:
            return []
        self.injected = True
        return [UserMsg("a notification", name="system")]

    async def after_save(self, scope: CallScope) -> None:
        self.saves += 1

    async def on_reply_end(self, scope: CallScope, final: Msg) -> None:
        self.ended.append(final.get_text_content())


async def test_extensions_add_tools_prompt_and_messages(tmp_path: Path) -> None:
    ext = Recorder()
    model = ScriptedModel([ScriptedModel.tool_call("ping", {}), "ok"])
    agent = harness(InMemoryStore(), model, tmp_path, extensions=[ext])
    await agent.call("hi", CTX)
    first = model.requests[0]
    assert "EXTENSION PROMPT" in first.system_prompt and "ping" in [t.name for t in first.tools]
    assert first.messages[-1].get_text_content() == "a notification"
    assert (
        results_of(model.requests[1].messages)[
            model.requests[1].messages[-2].tool_uses()[0].id
        ].output
        == "pong"
    )
    assert ext.saves == 2 and ext.ended == ["ok"]  # the checkpoint and the final save


# -- the seed's flow: state lives in Redis, not in the process ----------------------------------


async def test_a_new_process_resumes_the_conversation_from_redis(
    redis_args: StoreArgs, make_setup: SetupFactory
) -> None:
    setup = make_setup(redis_args)
    first = await anyio.to_thread.run_sync(
        helpers.run_fresh, helpers.child_call, setup, "my name is Ada"
    )
    assert first["text"] == "echo: my name is Ada"

    second = await anyio.to_thread.run_sync(
        helpers.run_fresh, helpers.child_call, setup, "what is my name?"
    )
    seen = helpers.requests_of(second)[0].messages
    assert helpers.transcript(seen) == [
        ("user", "my name is Ada"),
        ("assistant", "echo: my name is Ada"),
        ("user", "what is my name?"),
    ]
    state = await helpers.saved_state(setup)
    assert state is not None and len(state.context) == 4


# -- errors and cancellation --------------------------------------------------------------------


async def test_a_malformed_model_response_keeps_the_state_of_before_the_failing_step(
    tmp_path: Path,
) -> None:
    failing: list[ModelRequest] = []

    def fail(req: ModelRequest) -> ModelResponse:
        failing.append(req)
        raise ModelResponseError("response has no choices (model scripted)")

    model = ScriptedModel(["hello", ScriptedModel.tool_call("whoami", {}), fail, fail, "back"])
    agent = harness(JsonFileStore(tmp_path / "store"), model, tmp_path)
    await agent.call("turn 1", CTX)

    with pytest.raises(ModelResponseError, match="no choices"):
        await agent.call("turn 2", CTX)  # the error itself, not an ExceptionGroup
    saved = await agent.get_agent_state(CTX)
    assert saved.context == failing[0].messages  # turn 1, turn 2, the tool call and its result
    assert [m.role for m in saved.context] == ["user", "assistant", "user", "assistant", "user"]

    with pytest.raises(ModelResponseError):
        async for _ in agent.stream(None, CTX):
            pass
    assert (await agent.get_agent_state(CTX)).context == saved.context

    assert (await agent.call(None, CTX)).get_text_content() == "back"
    assert orphans(model.requests[-1].messages) == ([], [])


async def test_cancelling_a_call_mid_tool_saves_a_resumable_state(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    model = ScriptedModel(
        [ScriptedModel.tool_call("block", {"label": "b"}, id="b1"), "after the cancel"]
    )
    agent = harness(JsonFileStore(tmp_path / "store"), model, tmp_path, busy_timeout=0)

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.call, "go", CTX)
            await wait_for_start(log)
            scope.cancel()

    saved = await agent.get_agent_state(CTX)
    assert saved.context[-2].tool_uses()[0].id == "b1"
    assert results_of(saved.context)["b1"].output == hitl_mod.CANCELLED
    # busy_timeout=0: the lease was released, or this would raise SessionBusyError
    final = await agent.call("continue", CTX)
    assert final.get_text_content() == "after the cancel"
    assert orphans(model.requests[-1].messages) == ([], [])


async def test_cancelling_a_stream_mid_tool_saves_a_resumable_state(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    model = ScriptedModel([ScriptedModel.tool_call("block", {"label": "b"}, id="b1"), "resumed"])
    agent = harness(JsonFileStore(tmp_path / "store"), model, tmp_path, busy_timeout=0)

    async def consume() -> None:
        async for _ in agent.stream("go", CTX):
            pass

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await wait_for_start(log)
        tg.cancel_scope.cancel()

    assert results_of((await agent.get_agent_state(CTX)).context)["b1"].is_error
    assert (await agent.call("go on", CTX)).get_text_content() == "resumed"
    assert orphans(model.requests[-1].messages) == ([], [])


async def test_closing_a_stream_early_stops_the_reply_and_saves_it(tmp_path: Path) -> None:
    model = ScriptedModel([ScriptedModel.tool_call("block", {"label": "b"}, id="b1"), "later"])
    agent = harness(JsonFileStore(tmp_path / "store"), model, tmp_path, busy_timeout=0)
    async with aclosing(agent.stream("go", CTX)) as events:
        async for event in events:
            if event.type == "tool_call":
                break
    state = await agent.get_agent_state(CTX)
    assert results_of(state.context)["b1"].is_error and orphans(state.context) == ([], [])
    assert (await agent.call("again", CTX)).get_text_content() == "later"


async def wait_for_start(log: Path, count: int = 1) -> None:
    with anyio.fail_after(30):
        while sum(e["event"] == "start" for e in read_log(log)) < count:  # noqa: ASYNC110
            await anyio.sleep(0.01)


# -- many sessions through one agent ------------------------------------------------------------


@pytest.mark.parametrize("backend", ["memory", "file"])
async def test_two_hundred_concurrent_sessions_through_one_agent(
    backend: str, tmp_path: Path
) -> None:
    store = InMemoryStore() if backend == "memory" else JsonFileStore(tmp_path / "store")
    agent = harness(store, ScriptedModel(helpers.brain), tmp_path)
    ctxs = [CTX.with_session(f"s{i}") for i in range(200)]

    for turn in ("hello from {sid}", "use whoami {{}}"):
        async with anyio.create_task_group() as tg:
            for ctx in ctxs:
                tg.start_soon(agent.call, turn.format(sid=ctx.session_id), ctx)

    for ctx in ctxs:
        state = await agent.get_agent_state(ctx)
        sid = ctx.session_id
        assert helpers.transcript(state.context) == [
            ("user", f"hello from {sid}"),
            ("assistant", f"echo: hello from {sid}"),
            ("user", "use whoami {}"),
            ("assistant", ""),
            ("user", ""),
            ("assistant", f"done: {sid}"),
        ]
        assert state.context[4].tool_results()[0].output == sid
