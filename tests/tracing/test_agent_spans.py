"""Spans of one agent call, of its subagents (sync and background) and of HITL pauses, checked
with the SDK's in-memory exporter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.trace import StatusCode

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.events import ConfirmResult, RequireUserConfirmEvent, UserConfirmResultEvent
from agentscope_teams.model.base import ModelResponse, Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.state import PermissionRule
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.tools import PermissionEngine
from agentscope_teams.tracing import names

from ..subagents.helpers import ALICE, make_parent, settled, spawn
from .helpers import Spans, attrs, events, memory_provider

pytestmark = pytest.mark.anyio


def text(answer: str, tokens: tuple[int, int] = (0, 0)) -> ModelResponse:
    return ScriptedModel.text(answer, usage=Usage(input_tokens=tokens[0], output_tokens=tokens[1]))


def read(path: str) -> ModelResponse:
    return ScriptedModel.tool_call(
        "read_file", {"path": path}, id=f"call-{path}", usage=Usage(input_tokens=7, output_tokens=3)
    )


def glob(pattern: str) -> ModelResponse:
    return ScriptedModel.tool_call("glob_files", {"pattern": pattern}, id="call-glob")


async def test_lead_to_sync_subagent_to_tool_call_is_one_tree(tmp_path: Path) -> None:
    provider, exporter = memory_provider()
    child = ScriptedModel([glob("*.py"), read("missing.py"), text("LGTM", (40, 2))], name="rev-m")
    lead_model = ScriptedModel([spawn("rev", "review a.py"), text("done", (90, 5))], name="lead-m")
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
    lead = make_parent(
        tmp_path,
        InMemoryStore(),
        lead_model,
        {"rev": child},
        tracer_provider=provider,
        workspace_scope="shared",
    )

    await lead.call("review", ctx)

    spans = Spans(exporter.get_finished_spans())
    assert len(spans.trace_ids()) == 1
    root = spans.one("invoke_agent lead")
    assert root.parent is None
    assert attrs(root) == {
        names.OPERATION: "invoke_agent",
        names.AGENT_NAME: "lead",
        names.CONVERSATION_ID: "s1",
        names.USER_ID: "alice",
        names.ORG_ID: "acme",
        names.DEPTH: 0,
    }
    child_call = spans.one("invoke_agent rev")
    assert spans.ancestors(child_call) == ["execute_tool agent_spawn", "invoke_agent lead"]
    assert attrs(child_call)[names.DEPTH] == 1
    spawn_tool = spans.one("execute_tool agent_spawn")
    spawned = events(spawn_tool)[names.SUBAGENT_SPAWN]
    assert spawned[names.SPEC] == "rev" and spawned[names.BACKGROUND] is False

    ok, failed = spans.one("execute_tool glob_files"), spans.one("execute_tool read_file")
    for tool_span in (ok, failed):
        assert spans.ancestors(tool_span) == [
            "invoke_agent rev",
            "execute_tool agent_spawn",
            "invoke_agent lead",
        ]
    assert attrs(ok)[names.TOOL_NAME] == "glob_files"
    assert attrs(ok)[names.TOOL_CALL_ID] == "call-glob"
    assert attrs(failed)[names.TOOL_CALL_ID] == "call-missing.py"
    assert ok.status.status_code is StatusCode.UNSET
    assert failed.status.status_code is StatusCode.ERROR
    assert attrs(failed)[names.ERROR_TYPE] == "tool_error"
    assert names.TOOL_ARGUMENTS not in attrs(ok) and names.TOOL_RESULT not in attrs(ok)

    chats = spans.named("chat rev-m")
    assert len(chats) == 3 and all(spans.parent(c) is child_call for c in chats)
    last = max(chats, key=lambda s: s.start_time or 0)
    assert attrs(last) == {
        names.OPERATION: "chat",
        names.REQUEST_MODEL: "rev-m",
        names.RESPONSE_MODEL: "rev-m",
        names.AGENT_NAME: "rev",
        names.INPUT_TOKENS: 40,
        names.OUTPUT_TOKENS: 2,
        names.FINISH_REASONS: ("stop",),
    }
    first = min(chats, key=lambda s: s.start_time or 0)
    assert attrs(first)[names.FINISH_REASONS] == ("tool_calls",)
    assert [spans.parent(c) for c in spans.named("chat lead-m")] == [root, root]


async def test_a_background_run_joins_the_trace_of_the_spawn(tmp_path: Path) -> None:
    provider, exporter = memory_provider()
    store = InMemoryStore()
    child = ScriptedModel([glob("*.py"), "background answer"], delay=0.1)
    lead_model = ScriptedModel([spawn("rev", "later", timeout_seconds=0), "started", "ok"])
    lead = make_parent(tmp_path, store, lead_model, {"rev": child}, tracer_provider=provider)

    await lead.call("go", ALICE)
    [run] = await settled(store)
    await lead.call("news?", ALICE)

    assert run.background and run.trace_context is not None
    spans = Spans(exporter.get_finished_spans())
    first_call = min(spans.named("invoke_agent lead"), key=lambda s: s.start_time or 0)
    spawn_tool = spans.one("execute_tool agent_spawn")
    assert events(spawn_tool)[names.SUBAGENT_SPAWN][names.BACKGROUND] is True
    child_call = spans.one("invoke_agent rev")
    assert spans.ancestors(child_call) == ["execute_tool agent_spawn", "invoke_agent lead"]
    assert child_call.context.trace_id == first_call.context.trace_id
    assert child_call.start_time is not None and spawn_tool.end_time is not None
    assert child_call.end_time is not None and child_call.end_time > spawn_tool.end_time
    tool = spans.one("execute_tool glob_files")
    assert spans.parent(tool) is child_call


async def test_a_resumed_pause_links_to_the_span_that_paused(tmp_path: Path) -> None:
    provider, exporter = memory_provider()
    engine = PermissionEngine([PermissionRule(tool="write_file", behavior="ask")])
    model = ScriptedModel(
        [ScriptedModel.tool_call("write_file", {"path": "n.txt", "content": "hi"}), "written"]
    )
    agent = HarnessAgent(
        "solo",
        model,
        workspace=tmp_path,
        store=InMemoryStore(),
        permissions=engine,
        tracer_provider=provider,
    )
    asked = [e async for e in agent.stream("write it", ALICE)]
    ask = next(e for e in asked if isinstance(e, RequireUserConfirmEvent))
    assert (await agent.get_agent_state(ALICE)).pause_trace is not None
    answer = [ConfirmResult(tool_call_id=c.id, confirmed=True) for c in ask.tool_calls]
    await agent.call(UserConfirmResultEvent(reply_id=ask.reply_id, results=answer), ALICE)

    spans = Spans(exporter.get_finished_spans())
    pause, resume = spans.one(names.HITL_PAUSE), spans.one(names.HITL_RESUME)
    assert attrs(pause)[names.TOOLS] == ("write_file",)
    assert attrs(resume)[names.CONFIRMED] == 1 and attrs(resume)[names.REJECTED] == 0
    assert [link.context.span_id for link in resume.links] == [pause.context.span_id]
    first, second = sorted(spans.named("invoke_agent solo"), key=lambda s: s.start_time or 0)
    assert spans.parent(pause) is first and spans.parent(resume) is second
    assert spans.parent(spans.one("execute_tool write_file")) is second
    assert (await agent.get_agent_state(ALICE)).pause_trace is None


async def test_contents_are_recorded_only_when_the_user_opts_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_text("SECRET = 1\n")

    async def run() -> Spans:
        provider, exporter = memory_provider()
        model = ScriptedModel([read("a.py"), "the answer"])
        agent = HarnessAgent(
            "solo",
            model,
            workspace=tmp_path,
            workspace_scope="shared",
            store=InMemoryStore(),
            tracer_provider=provider,
        )
        await agent.call("what is in a.py?", ALICE)
        return Spans(exporter.get_finished_spans())

    off = await run()
    dumped = json.dumps([attrs(s) for s in off.all], default=str)
    assert "SECRET" not in dumped and "what is in a.py?" not in dumped

    monkeypatch.setenv(names.CAPTURE_CONTENT_ENV, "true")
    on = await run()
    tool = attrs(on.one("execute_tool read_file"))
    assert json.loads(tool[names.TOOL_ARGUMENTS]) == {"path": "a.py"}
    assert "SECRET = 1" in tool[names.TOOL_RESULT]
    first_chat = min(on.named("chat scripted"), key=lambda s: s.start_time or 0)
    assert "what is in a.py?" in attrs(first_chat)[names.INPUT_MESSAGES]


async def test_no_provider_and_no_global_one_records_nothing(tmp_path: Path) -> None:
    provider, exporter = memory_provider()
    agent = HarnessAgent("solo", ScriptedModel(["hi"]), workspace=tmp_path, store=InMemoryStore())
    await agent.call("hello", ALICE)
    assert exporter.get_finished_spans() == ()
    traced = HarnessAgent(
        "solo",
        ScriptedModel(["hi"]),
        workspace=tmp_path,
        store=InMemoryStore(),
        tracer_provider=provider,
    )
    await traced.call("hello", ALICE)
    assert [s.name for s in exporter.get_finished_spans()] == ["chat scripted", "invoke_agent solo"]
