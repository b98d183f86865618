"""Response parsing: lenient bodies, stop reasons, stream assembly."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_teams.errors import ModelResponseError
from agentscope_teams.model.openai_response import StreamAssembler, parse_completion
from agentscope_teams.model.response_parsing import RAW_ARGUMENTS_KEY, parse_arguments


def body(message: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {"choices": [{"message": message, "finish_reason": finish}]}


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("content_filter", "content_filter"),
        ("weird", "other"),
        (None, "other"),
    ],
)
def test_stop_reasons(finish: str | None, expected: str) -> None:
    response = parse_completion(body({"content": "x"}, finish), model="m", source="s")
    assert response.stop_reason == expected


def test_tool_calls_with_stop_count_as_tool_use() -> None:
    msg = {"content": None, "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": ""}}]}
    response = parse_completion(body(msg, "stop"), model="m", source="s")
    assert response.stop_reason == "tool_use"
    assert response.tool_calls[0].input == {}


def test_content_parts_and_dict_arguments_are_accepted() -> None:
    msg = {
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}],
    }
    response = parse_completion(body(msg, "tool_calls"), model="m", source="s")
    assert response.text == "ab"
    [call] = response.tool_calls
    assert call.input == {"x": 1} and call.id.startswith("call_")
    assert response.model == "m"


@pytest.mark.parametrize("raw", ["{bad", "[1, 2]", '"text"', "null"])
def test_non_object_arguments_are_kept_raw(raw: str) -> None:
    assert parse_arguments(raw) == {RAW_ARGUMENTS_KEY: raw}


@pytest.mark.parametrize("data", ["plain text", [1], {"choices": "nope"}])
def test_not_a_completion(data: object) -> None:
    with pytest.raises(ModelResponseError, match="not a chat completion"):
        parse_completion(data, model="m", source="s")


def test_stream_tool_calls_without_index() -> None:
    assembler = StreamAssembler(model="m", source="s")
    first = {"id": "a", "function": {"name": "f", "arguments": '{"x"'}}
    rest = {"function": {"arguments": ": 1}"}}
    second = {"id": "b", "function": {"name": "g", "arguments": "{}"}}
    for call in (first, rest, second):
        assembler.feed({"choices": [{"delta": {"tool_calls": [call]}}]})
    response = assembler.finish()
    assert [(c.id, c.name, c.input) for c in response.tool_calls] == [
        ("a", "f", {"x": 1}),
        ("b", "g", {}),
    ]
    assert response.stop_reason == "tool_use"
