"""Structured output of HarnessAgent replies (``output_type=``) with ScriptedModel: the fallback
tool path and the native path, invalid output corrected, retry exhaustion, HITL resume."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from agentscope_teams import (
    HarnessAgent,
    InMemoryStore,
    OutputRetriesExceededError,
    OutputTypeMismatchError,
    ReActConfig,
    RuntimeContext,
    ScriptedModel,
)
from agentscope_teams.events import RequireUserConfirmEvent, UserConfirmResultEvent
from agentscope_teams.model import ModelRequest, Usage
from agentscope_teams.store import store_from_url

from .helpers import run_fresh
from .output_helpers import (
    Finding,
    OtherReport,
    Report,
    guarded_tools,
    make_agent,
    resume_elsewhere,
)

CTX = RuntimeContext(session_id="s-1", user_id="alice")
GOOD = {"findings": [{"file": "a.py", "line": 3, "message": "unused import"}], "summary": "one"}


def agent_with(model: ScriptedModel, tmp_path: Path, **kw: object) -> HarnessAgent:
    return HarnessAgent(
        "lead", model, store=InMemoryStore(), workspace=tmp_path / "ws", builtin_tools=False, **kw
    )  # type: ignore[arg-type]


def results_named(request: ModelRequest, name: str) -> list[str]:
    return [b.output for m in request.messages for b in m.tool_results() if b.name == name]


async def test_tool_mode_offers_final_result_and_returns_the_typed_value(tmp_path: Path) -> None:
    model = ScriptedModel([ScriptedModel.final_result(GOOD, usage=Usage(input_tokens=5))])
    agent = agent_with(model, tmp_path)
    msg = await agent.call("review a.py", CTX, output_type=Report)
    assert isinstance(msg.output, Report)
    assert msg.output.findings[0] == Finding(file="a.py", line=3, message="unused import")
    assert msg.output_as(Report) is msg.output
    assert json.loads(msg.get_text_content()) == GOOD
    offered = {t.name: t for t in model.requests[0].tools}
    assert offered["final_result"].parameters == Report.model_json_schema()
    assert model.requests[0].response_schema is None
    # the saved conversation ends cleanly: the final_result call has its result, then the answer
    state = await agent.get_agent_state(CTX)
    assert state.awaiting_tool_calls() == []
    assert state.context[-1].metadata["output"] == GOOD
    assert "structured_output" not in state.middle_context
    used = [m.metadata["usage"]["input_tokens"] for m in state.context if "usage" in m.metadata]
    assert sum(used) == 5  # counted once, on the message of the model call
    # read back from the store, the typed accessor validates the saved JSON again
    assert state.context[-1].output_as(Report) == msg.output
    assert state.context[-1] == msg  # the stored message equals the returned one


async def test_output_as_on_a_plain_reply_names_the_message_and_the_fix(tmp_path: Path) -> None:
    msg = await agent_with(ScriptedModel(["plain text"]), tmp_path).call("hi", CTX)
    assert msg.output is None
    with pytest.raises(ValueError, match=f"message {msg.id} has no structured output") as info:
        msg.output_as(Report)
    assert "pass output_type= to call() / stream()" in str(info.value)


async def test_invalid_output_goes_back_with_field_paths_then_is_corrected(tmp_path: Path) -> None:
    bad = {"findings": [{"file": "a.py", "line": "three"}], "summary": "one"}
    model = ScriptedModel([ScriptedModel.final_result(bad), ScriptedModel.final_result(GOOD)])
    msg = await agent_with(model, tmp_path).call("review", CTX, output_type=Report)
    assert msg.output == Report.model_validate(GOOD)
    [feedback] = results_named(model.requests[1], "final_result")
    assert "findings.0.line: Input should be a valid integer" in feedback
    assert "findings.0.message: Field required" in feedback
    assert "2 retries left" in feedback


async def test_tools_run_before_the_final_result(tmp_path: Path) -> None:
    from agentscope_teams.tools import tool

    @tool
    async def count_lines(path: str) -> str:
        """Count lines.

        Args:
            path: A file.
        """
        return "42"

    model = ScriptedModel(
        [
            ScriptedModel.tool_call("count_lines", {"path": "a.py"}),
            ScriptedModel.final_result(42),
        ]
    )
    agent = agent_with(model, tmp_path, tools=[count_lines])
    msg = await agent.call("how many lines?", CTX, output_type=int)
    assert msg.output == 42
    assert results_named(model.requests[1], "count_lines") == ["42"]
    # int is not an object: the tool takes {"result": <int>}
    final = next(t for t in model.requests[0].tools if t.name == "final_result")
    assert final.parameters["required"] == ["result"]


async def test_retry_exhaustion_raises_a_typed_error_and_saves_the_conversation(
    tmp_path: Path,
) -> None:
    bad = ScriptedModel.final_result({"summary": 5})
    model = ScriptedModel([bad, bad])
    agent = agent_with(model, tmp_path, config=ReActConfig(output_retries=1))
    with pytest.raises(OutputRetriesExceededError) as caught:
        await agent.call("review", CTX, output_type=Report)
    err = caught.value
    assert (err.output_name, err.attempts) == ("Report", 2)
    assert "findings: Field required" in err.problems
    assert len(model.requests) == 2
    state = await agent.get_agent_state(CTX)
    assert state.awaiting_tool_calls() == []  # every final_result call got its (error) result
    assert "structured_output" not in state.middle_context
    # the session is usable again: a plain call works
    model2 = ScriptedModel(["fine"])
    agent2 = HarnessAgent("lead", model2, store=agent.store, workspace=tmp_path / "ws")
    assert (await agent2.call("hello", CTX)).get_text_content() == "fine"


async def test_native_mode_sends_the_schema_and_reads_json_text(tmp_path: Path) -> None:
    model = ScriptedModel(
        ["Sure! here it is", "```json\n" + json.dumps(GOOD) + "\n```"], structured_output="native"
    )
    msg = await agent_with(model, tmp_path).call("review", CTX, output_type=Report)
    assert msg.output == Report.model_validate(GOOD)
    schema = model.requests[0].response_schema
    assert schema is not None and schema.json_schema == Report.model_json_schema()
    assert schema.name == "Report" and schema.strict is True  # closed objects, all required
    assert all(t.name != "final_result" for t in model.requests[0].tools)
    feedback = model.requests[1].messages[-1].get_text_content()
    assert (
        "not valid JSON" in feedback and "Answer again with only JSON matching Report" in feedback
    )


async def test_strict_when_the_schema_allows_and_wrapped_when_not_an_object(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(['{"result": [{"file": "b.py", "line": 1, "message": "m"}]}'])
    model.structured_output = "native"
    msg = await agent_with(model, tmp_path).call("review", CTX, output_type=list[Finding])
    assert msg.output == [Finding(file="b.py", line=1, message="m")]
    schema = model.requests[0].response_schema
    assert schema is not None
    assert schema.strict is True  # extra="forbid", no defaults: strict mode can enforce it
    assert schema.name == "list[Finding]"
    assert schema.json_schema["properties"]["result"]["type"] == "array"
    loose = ScriptedModel(['{"verdict": "ok"}'], structured_output="native")
    await agent_with(loose, tmp_path).call("v", CTX, output_type=OtherReport)
    sent = loose.requests[0].response_schema
    assert sent is not None and sent.strict is False  # open object: sent non-strict


async def test_a_json_schema_mapping_gives_json_data(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"severity": {"enum": ["low", "high"]}},
        "required": ["severity"],
    }
    model = ScriptedModel(
        [
            ScriptedModel.final_result({"severity": "meh"}),
            ScriptedModel.final_result({"severity": "low"}),
        ]
    )
    msg = await agent_with(model, tmp_path).call("rate", CTX, output_type=schema)
    assert msg.output == {"severity": "low"}
    [feedback] = results_named(model.requests[1], "final_result")
    assert "severity: 'meh' is not one of ['low', 'high']" in feedback


async def test_other_types_and_a_text_json_answer_in_tool_mode(tmp_path: Path) -> None:
    @dataclass
    class Point:
        x: int
        y: int

    model = ScriptedModel(['{"x": 1, "y": 2}'])  # tool mode, but the text is a valid answer
    assert (await agent_with(model, tmp_path).call("p", CTX, output_type=Point)).output == Point(
        1, 2
    )
    model = ScriptedModel(["no idea", ScriptedModel.final_result("high")])
    msg = await agent_with(model, tmp_path).call("p", CTX, output_type=Literal["low", "high"])
    assert msg.output == "high"
    nudge = model.requests[1].messages[-1].get_text_content()
    assert "Call final_result with your final answer" in nudge


async def test_stream_carries_the_output_on_the_reply_end(tmp_path: Path) -> None:
    model = ScriptedModel([ScriptedModel.final_result(GOOD)])
    events = [e async for e in agent_with(model, tmp_path).stream("r", CTX, output_type=Report)]
    assert events[-1].type == "reply_end"
    assert events[-1].msg.output == Report.model_validate(GOOD)  # type: ignore[union-attr]


async def test_the_last_step_offers_only_final_result(tmp_path: Path) -> None:
    model = ScriptedModel(
        [ScriptedModel.tool_call("deploy", {"target": "x"}), ScriptedModel.final_result(GOOD)]
    )
    agent = agent_with(model, tmp_path, tools=guarded_tools(), config=ReActConfig(max_iters=1))
    agent.loop.permissions.mode = "bypass"  # type: ignore[attr-defined]
    msg = await agent.call("go", CTX, output_type=Report)
    assert msg.output == Report.model_validate(GOOD)
    assert [t.name for t in model.requests[1].tools] == ["final_result"]
    assert "calling final_result" in model.requests[1].messages[-1].get_text_content()


async def test_a_type_without_a_json_schema_is_refused_before_the_call(tmp_path: Path) -> None:
    from agentscope_teams import ConfigurationError
    from agentscope_teams.tools import tool

    model = ScriptedModel(["x"])
    with pytest.raises(ConfigurationError, match="has no JSON schema"):
        await agent_with(model, tmp_path).call("x", CTX, output_type=object())
    assert model.requests == []

    @tool
    async def final_result(x: int) -> str:
        """Clashes with the final-answer tool.

        Args:
            x: A number.
        """
        return ""

    clash = agent_with(model, tmp_path, tools=[final_result])
    with pytest.raises(ConfigurationError, match="rename that tool"):
        await clash.call("x", CTX, output_type=int)
    assert model.requests == []
    assert (await clash.get_agent_state(CTX)).context == []  # nothing was saved


async def _pause(store_url: str, workspace: Path) -> tuple[RequireUserConfirmEvent, str]:
    model = ScriptedModel([ScriptedModel.tool_call("deploy", {"target": "prod"})])
    async with make_agent(store_url, workspace, model) as agent:
        events = [e async for e in agent.stream("deploy and report", CTX, output_type=Report)]
    asks = [e for e in events if isinstance(e, RequireUserConfirmEvent)]
    assert len(asks) == 1
    return asks[0], asks[0].tool_calls[0].id


async def test_hitl_resume_in_another_process_validates_against_the_same_type(
    tmp_path: Path,
) -> None:
    url = f"file://{tmp_path / 'store'}"
    ask, call_id = await _pause(url, tmp_path / "ws")
    ctx_session = CTX.session_id
    # a different type is refused before anything changes; the reply stays paused
    async with HarnessAgent(
        "lead", ScriptedModel([]), store=store_from_url(url), workspace=tmp_path / "ws"
    ) as agent:
        before = await agent.sessions.get_at(agent.address(CTX))
        event = UserConfirmResultEvent.model_validate(
            {"reply_id": ask.reply_id, "results": [{"tool_call_id": call_id, "confirmed": True}]}
        )
        with pytest.raises(OutputTypeMismatchError, match="paused with output type 'Report'"):
            await agent.call(event, CTX, output_type=OtherReport)
        after = await agent.sessions.get_at(agent.address(CTX))
        assert before is not None and after is not None and after.version == before.version
        assert after.state.awaiting_confirmation == [call_id]
    done = run_fresh(
        resume_elsewhere, url, str(tmp_path / "ws"), ctx_session, ask.reply_id, call_id, True
    )
    assert done["output_class"] == "Report"
    assert done["data"]["findings"][0]["line"] == 3
    assert "final_result" in done["tools_offered"]  # the stored mode (tool) was kept
    assert "findings.0.line: Input should be a valid integer" in done["feedback"][0]
    assert done["left_in_state"] is False


async def test_hitl_resume_without_a_type_validates_against_the_stored_schema(
    tmp_path: Path,
) -> None:
    url = f"file://{tmp_path / 'store'}"
    ask, call_id = await _pause(url, tmp_path / "ws")
    done = run_fresh(
        resume_elsewhere, url, str(tmp_path / "ws"), CTX.session_id, ask.reply_id, call_id, False
    )
    assert done["output_class"] == "dict"  # JSON data: no Python type was given
    assert done["data"]["summary"] == "1"
    assert "findings.0.line" in done["feedback"][0]  # the stored JSON schema still checked it
