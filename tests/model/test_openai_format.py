"""Request conversion: where tool results go, data blocks, names."""

from __future__ import annotations

from typing import Any

from agentscope_teams.message import (
    AssistantMsg,
    DataBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMsg,
)
from agentscope_teams.model import ModelRequest
from agentscope_teams.model.openai_format import MISSING_RESULT, to_openai_messages


def convert(*messages: Msg, system: str = "") -> list[dict[str, Any]]:
    return to_openai_messages(ModelRequest(system_prompt=system, messages=list(messages)))


def use(call_id: str, name: str = "f") -> ToolUseBlock:
    return ToolUseBlock(id=call_id, name=name, input={"n": call_id})


def result(call_id: str, output: str, **kw: Any) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=call_id, output=output, **kw)


def roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] + (":" + m["tool_call_id"] if m["role"] == "tool" else "") for m in messages]


def test_system_prompt_comes_first() -> None:
    out = convert(UserMsg("hi"), system="rules")
    assert out == [{"role": "system", "content": "rules"}, {"role": "user", "content": "hi"}]


def test_results_in_a_user_message_follow_their_call_and_the_text_stays() -> None:
    out = convert(
        UserMsg("go"),
        AssistantMsg([TextBlock(text="calling"), use("a"), use("b")]),
        UserMsg([result("b", "B"), result("a", "A", is_error=True), TextBlock(text="also this")]),
    )
    assert roles(out) == ["user", "assistant", "tool:a", "tool:b", "user"]
    assert out[1]["content"] == "calling"
    assert [c["id"] for c in out[1]["tool_calls"]] == ["a", "b"]
    assert out[1]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"n": "a"}'}
    assert out[2]["content"] == "Error: A" and out[3]["content"] == "B"
    assert out[4] == {"role": "user", "content": "also this"}


def test_an_assistant_trace_with_inline_results_is_split_per_step() -> None:
    trace = AssistantMsg(
        [
            TextBlock(text="step 1"),
            use("a"),
            result("a", "A"),
            TextBlock(text="step 2"),
            use("b"),
            result("b", "B"),
            TextBlock(text="final answer"),
        ]
    )
    out = convert(UserMsg("go"), trace)
    assert roles(out) == ["user", "assistant", "tool:a", "assistant", "tool:b", "assistant"]
    assert [m["content"] for m in out if m["role"] == "assistant"] == [
        "step 1",
        "step 2",
        "final answer",
    ]
    assert [m["content"] for m in out if m["role"] == "tool"] == ["A", "B"]


def test_a_result_in_a_later_assistant_message_moves_back_to_its_call() -> None:
    out = convert(UserMsg("go"), AssistantMsg([use("a")]), AssistantMsg([result("a", "A")]))
    assert roles(out) == ["user", "assistant", "tool:a"]


def test_a_call_without_result_gets_a_placeholder() -> None:
    out = convert(UserMsg("go"), AssistantMsg([use("a")]), UserMsg("continue"))
    assert roles(out) == ["user", "assistant", "tool:a", "user"]
    assert out[2]["content"] == MISSING_RESULT


def test_an_orphan_result_is_kept_as_text() -> None:
    out = convert(UserMsg([result("zzz", "lost output")]))
    assert roles(out) == ["user"]
    assert "zzz" in out[0]["content"] and "lost output" in out[0]["content"]


def test_data_blocks() -> None:
    out = convert(
        UserMsg(
            [
                TextBlock(text="look"),
                DataBlock(data={"a": [1, 2]}),
                DataBlock(media_type="image/png", data="iVBORw0"),
            ]
        ),
        AssistantMsg([DataBlock(data={"ok": True})]),
    )
    assert out[0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "text", "text": '{"a": [1, 2]}'},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0"}},
    ]
    assert out[1]["content"] == '{"ok": true}'


def test_names_are_sanitized_or_omitted() -> None:
    out = convert(
        UserMsg("a", name="Alice Smith <boss>"),
        UserMsg("b"),
        AssistantMsg("c", name="coder"),
        UserMsg("d", name="???"),
    )
    assert out[0]["name"] == "Alice_Smith__boss_"
    assert "name" not in out[1] and "name" not in out[3]
    assert out[2]["name"] == "coder"
