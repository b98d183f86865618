"""The ReAct loop on its own: events, bad input, max_iters, parallel tools, cancellation, recovery."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams.agent import ReActAgent, ReActConfig, ReplyOptions
from agentscope_teams.agent import hitl as hitl_mod
from agentscope_teams.events import (
    AgentEvent,
    ExceedMaxItersEvent,
    HintEvent,
    ReplyEndEvent,
    ReplyStartEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from agentscope_teams.message import AssistantMsg, ToolUseBlock, UserMsg
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.state import AgentState
from agentscope_teams.tools import Tool, ToolEnv, Toolkit, filesystem_tools, tool

from .helpers import orphans, results_of


def call(name: str, id: str, **input: Any) -> ToolUseBlock:
    return ToolUseBlock(id=id, name=name, input=input)


async def collect(agent: ReActAgent, input: Any, state: AgentState, **opts: Any) -> list[Any]:
    return [e async for e in agent.reply_stream(input, state, ReplyOptions(**opts))]


# -- one implementation, events ---------------------------------------------------------------


def script() -> list[ModelResponse | str]:
    return [
        ScriptedModel.tool_calls([call("echo", "c1", text="hi")], text="let me check"),
        "all done here",
    ]


async def echo(text: str) -> str:
    """Echo the text."""
    return f"echoed {text}"


async def test_reply_and_reply_stream_reach_the_same_state() -> None:
    streamed, replied = AgentState(session_id="s"), AgentState(session_id="s")
    a = ReActAgent("bot", ScriptedModel(script()), "sys", Toolkit([tool(echo)]))
    b = ReActAgent("bot", ScriptedModel(script()), "sys", Toolkit([tool(echo)]))

    events = await collect(a, "hello", streamed)
    final = await b.reply("hello", replied)

    assert isinstance(events[-1], ReplyEndEvent)
    assert events[-1].msg.get_text_content() == final.get_text_content() == "all done here"
    dump = {"exclude": {"id", "created_at", "metadata"}}
    assert [m.model_dump(**dump) for m in streamed.context] == [  # type: ignore[arg-type]
        m.model_dump(**dump)  # type: ignore[arg-type]
        for m in replied.context
    ]
    assert streamed.context[-1].id == streamed.reply_id  # the final message carries the reply id


async def test_stream_yields_the_events_of_section_8_in_order() -> None:
    agent = ReActAgent("bot", ScriptedModel(script()), "sys", Toolkit([tool(echo)]))
    events = await collect(agent, "hello", AgentState(session_id="s"))
    types = [e.type for e in events if e.type != "text_delta"]

    assert types == [
        "reply_start",
        "model_call_start",
        "model_call_end",
        "tool_call",
        "tool_result",
        "model_call_start",
        "model_call_end",
        "reply_end",
    ]
    deltas = "".join(e.text for e in events if e.type == "text_delta")
    assert deltas == "let me checkall done here"
    assert len({e.reply_id for e in events}) == 1
    result = next(e for e in events if isinstance(e, ToolResultEvent)).result
    assert (result.tool_use_id, result.output, result.is_error) == ("c1", "echoed hi", False)


async def test_one_agent_instance_serves_concurrent_states() -> None:
    def answer(req: ModelRequest) -> str:
        return "echo " + req.messages[-1].get_text_content()

    agent = ReActAgent("bot", ScriptedModel(answer, delay=0.01))
    states = [AgentState(session_id=f"s{i}") for i in range(50)]
    async with anyio.create_task_group() as tg:
        for i, st in enumerate(states):
            tg.start_soon(agent.reply, f"msg {i}", st)
    for i, st in enumerate(states):
        assert [m.get_text_content() for m in st.context] == [f"msg {i}", f"echo msg {i}"]


async def test_bad_input_raises_before_anything_changes() -> None:
    state = AgentState(session_id="s")
    agent = ReActAgent("bot", ScriptedModel([]))
    with pytest.raises(TypeError, match="reply input must be"):
        await agent.reply(42, state)  # type: ignore[arg-type]
    assert state == AgentState(session_id="s")


# -- the model's mistakes become tool errors ----------------------------------------------------


async def boom() -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


async def test_model_mistakes_become_error_results_and_the_loop_continues(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("fine\n")
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("no_such_tool", {}, id="u1"),
            ScriptedModel.tool_call("read_file", {"bogus": 1}, id="u2"),
            ScriptedModel.tool_call("boom", {}, id="u3"),
            ScriptedModel.tool_call("read_file", {"path": "../../etc/passwd"}, id="u4"),
            ScriptedModel.tool_call("read_file", {"path": "ok.txt"}, id="u5"),
            "recovered",
        ]
    )
    toolkit = Toolkit([*filesystem_tools(), tool(boom)])
    agent = ReActAgent("bot", model, "sys", toolkit, ReActConfig(max_iters=10))
    state = AgentState(session_id="s")

    final = await agent.reply("go", state, ReplyOptions(env=ToolEnv(workspace=tmp_path)))

    assert final.get_text_content() == "recovered"
    expected = {
        "u1": "unknown tool 'no_such_tool'",
        "u2": "invalid arguments for tool 'read_file'",
        "u3": "tool boom failed: RuntimeError: disk on fire",
        "u4": "outside the workspace",
    }
    for step, (call_id, text) in enumerate(expected.items(), start=1):
        seen = model.requests[step].messages[-1].tool_results()  # the request right after
        assert [r.tool_use_id for r in seen] == [call_id]
        assert seen[0].is_error and text in seen[0].output
    ok = model.requests[5].messages[-1].tool_results()[0]
    assert (ok.tool_use_id, ok.is_error) == ("u5", False) and "fine" in ok.output


async def test_max_iters_emits_the_event_and_makes_one_final_call_without_tools() -> None:
    def always_a_tool(req: ModelRequest) -> ModelResponse | str:
        if not req.tools:
            return "final answer"
        return ScriptedModel.tool_call("echo", {"text": "again"})

    model = ScriptedModel(always_a_tool)
    agent = ReActAgent("bot", model, "", Toolkit([tool(echo)]), ReActConfig(max_iters=3))
    state = AgentState(session_id="s")
    events = await collect(agent, "loop", state)

    exceeded = [e for e in events if isinstance(e, ExceedMaxItersEvent)]
    assert len(exceeded) == 1 and exceeded[0].max_iters == 3
    assert [bool(r.tools) for r in model.requests] == [True, True, True, False]
    assert "maximum number of reasoning steps" in model.requests[-1].messages[-1].get_text_content()
    assert events[-1].msg.get_text_content() == "final answer"
    assert state.context[-1].tool_uses() == [] and orphans(state.context) == ([], [])
    assert not any("maximum number" in m.get_text_content() for m in state.context)


# -- parallel tools -----------------------------------------------------------------------------


def timing_tools(log: list[tuple[str, str, float]]) -> list[Tool]:
    started: dict[str, anyio.Event] = {}

    def mark(label: str, what: str) -> None:
        log.append((label, what, time.monotonic()))

    async def probe(label: str, partner: str = "") -> str:
        """Concurrency-safe: waits (bounded) for its partner to start too."""
        mark(label, "start")
        started.setdefault(label, anyio.Event()).set()
        if partner:
            with anyio.fail_after(10):
                await started.setdefault(partner, anyio.Event()).wait()
        await anyio.sleep(0.01)
        mark(label, "end")
        return f"probe {label}"

    async def write(label: str) -> str:
        """Not concurrency-safe."""
        mark(label, "start")
        await anyio.sleep(0.02)
        mark(label, "end")
        return f"write {label}"

    return [tool(probe, read_only=True), tool(write)]


async def test_safe_tools_overlap_unsafe_ones_run_alone_results_keep_call_order() -> None:
    log: list[tuple[str, str, float]] = []
    calls = [
        call("probe", "a", label="a", partner="b"),
        call("probe", "b", label="b", partner="a"),
        call("write", "c", label="c"),
        call("write", "d", label="d"),
        call("probe", "e", label="e"),
    ]
    model = ScriptedModel([ScriptedModel.tool_calls(calls), "ok"])
    agent = ReActAgent("bot", model, "", Toolkit(timing_tools(log)))
    await agent.reply("go", AgentState(session_id="s"))

    at = {(label, what): t for label, what, t in log}
    assert max(at["a", "start"], at["b", "start"]) < min(at["a", "end"], at["b", "end"])
    assert max(at["a", "end"], at["b", "end"]) <= at["c", "start"]
    assert at["c", "end"] <= at["d", "start"] and at["d", "end"] <= at["e", "start"]
    results = model.requests[1].messages[-1].tool_results()
    assert [r.tool_use_id for r in results] == ["a", "b", "c", "d", "e"]
    assert [r.output for r in results] == [
        "probe a",
        "probe b",
        "write c",
        "write d",
        "probe e",
    ]


async def test_parallel_tools_off_runs_safe_tools_one_by_one() -> None:
    log: list[tuple[str, str, float]] = []
    calls = [call("probe", "a", label="a"), call("probe", "b", label="b")]
    model = ScriptedModel([ScriptedModel.tool_calls(calls), "ok"])
    config = ReActConfig(parallel_tools=False)
    agent = ReActAgent("bot", model, "", Toolkit(timing_tools(log)), config)
    await agent.reply("go", AgentState(session_id="s"))
    at = {(label, what): t for label, what, t in log}
    assert at["a", "end"] <= at["b", "start"]


# -- cancellation and recovery ------------------------------------------------------------------


async def test_cancel_mid_tool_keeps_finished_results_and_closes_the_rest() -> None:
    log: list[tuple[str, str, float]] = []
    blocking = anyio.Event()

    async def hang(label: str) -> str:
        """Never returns."""
        blocking.set()
        await anyio.sleep_forever()
        return label

    calls = [call("write", "w1", label="w1"), call("hang", "h1", label="h1")]
    model = ScriptedModel([ScriptedModel.tool_calls(calls), "resumed fine"])
    agent = ReActAgent("bot", model, "", Toolkit([*timing_tools(log), tool(hang)]))
    state = AgentState(session_id="s")

    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.reply, "go", state)
        await blocking.wait()
        tg.cancel_scope.cancel()

    results = results_of(state.context)
    assert (results["w1"].output, results["w1"].is_error) == ("write w1", False)
    assert results["h1"].is_error and results["h1"].output == hitl_mod.CANCELLED
    assert orphans(state.context) == ([], [])

    final = await agent.reply("continue", state)
    assert final.get_text_content() == "resumed fine"
    assert orphans(model.requests[-1].messages) == ([], [])


def orphan_state() -> AgentState:
    state = AgentState(session_id="s", reply_id="old")
    state.context += [
        UserMsg("do it"),
        AssistantMsg([call("echo", "lost", text="x")], name="bot"),
    ]
    return state


async def test_pending_tool_recovery_is_on_by_default() -> None:
    model = ScriptedModel(["fresh answer"])
    agent = ReActAgent("bot", model, "", Toolkit([tool(echo)]))
    state = orphan_state()
    events = await collect(agent, "next", state)

    assert isinstance(events[0], ReplyStartEvent)
    hint = next(e for e in events if isinstance(e, HintEvent))
    assert "closed 1 unfinished tool call" in hint.text
    seen = model.requests[0].messages
    assert orphans(seen) == ([], [])
    recovered = results_of(seen)["lost"]
    assert recovered.is_error and recovered.output == hitl_mod.RECOVERED
    assert seen[-1].get_text_content() == "next"


async def test_pending_tool_recovery_can_be_turned_off() -> None:
    model = ScriptedModel(["answer"])
    agent = ReActAgent(
        "bot", model, "", Toolkit([tool(echo)]), ReActConfig(recover_pending_tools=False)
    )
    events: list[AgentEvent] = await collect(agent, "next", orphan_state())
    assert not any(isinstance(e, HintEvent) for e in events)
    assert orphans(model.requests[0].messages) == (["lost"], [])


async def test_tool_calls_are_reported_in_events_even_when_denied() -> None:
    from agentscope_teams.state import PermissionRule
    from agentscope_teams.tools import PermissionEngine

    engine = PermissionEngine([PermissionRule(tool="echo", behavior="deny")])
    model = ScriptedModel([ScriptedModel.tool_call("echo", {"text": "x"}, id="d1"), "ok"])
    agent = ReActAgent("bot", model, "", Toolkit([tool(echo)]), permissions=engine)
    events = await collect(agent, "go", AgentState(session_id="s"))
    assert [e.tool_call.id for e in events if isinstance(e, ToolCallEvent)] == ["d1"]
    denied = next(e.result for e in events if isinstance(e, ToolResultEvent))
    assert denied.is_error and "denied by rule deny echo" in denied.output


async def test_tools_registered_after_construction_are_used() -> None:
    toolkit = Toolkit()  # empty, hence falsy: must still be the agent's own toolkit
    model = ScriptedModel([ScriptedModel.tool_call("echo", {"text": "late"}), "ok"])
    agent = ReActAgent("bot", model, "", toolkit)
    toolkit.register(tool(echo))
    await agent.reply("go", AgentState(session_id="s"))
    assert model.requests[1].messages[-1].tool_results()[0].output == "echoed late"
