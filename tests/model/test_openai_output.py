"""Structured output through OpenAIChatModel against a real local chat-completions server: the
native ``response_format`` JSON schema path, and the final-answer tool path for other endpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from agentscope_teams import HarnessAgent, InMemoryStore, ReActConfig, RuntimeContext
from agentscope_teams.errors import ModelConfigurationError
from agentscope_teams.model import OpenAIChatModel

from .fake_openai import FakeOpenAI, Reply, chunk, completion, function_call

KEY = "sk-test-output-0123456789"
CTX = RuntimeContext(session_id="s-out")


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str
    line: int


class Loose(BaseModel):
    file: str
    line: int = 0


def sse_text(text: str) -> Reply:
    return Reply(
        sse=[
            chunk({"role": "assistant", "content": text}),
            chunk({}, finish_reason="stop"),
            chunk(None),
            "[DONE]",
        ]
    )


def agent_for(model: OpenAIChatModel, tmp_path: Path, stream: bool = True) -> HarnessAgent:
    return HarnessAgent(
        "lead",
        model,
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
        builtin_tools=False,
        config=ReActConfig(stream_model=stream),
    )


def format_of(body: Any) -> dict[str, Any]:
    assert isinstance(body, dict)
    return dict(body["response_format"])


async def test_native_response_format_is_strict_and_invalid_json_is_sent_back(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.add(
        sse_text('{"file": "a.py", "line": "ten"}'), sse_text('{"file": "a.py", "line": 10}')
    )
    async with OpenAIChatModel("gpt-test", api_key=KEY, base_url=fake_openai.url) as model:
        assert model.structured_output == "native"  # provider openai: native by default
        msg = await agent_for(model, tmp_path).call("find one", CTX, output_type=Finding)
    assert msg.output == Finding(file="a.py", line=10)
    first, second = (r.body for r in fake_openai.requests)
    sent = format_of(first)
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "Finding"
    assert sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["schema"] == Finding.model_json_schema()
    assert "tools" not in first
    # the invalid answer and the problem with its field path went back to the model
    assert second["messages"][-2] == {
        "role": "assistant",
        "content": '{"file": "a.py", "line": "ten"}',
        "name": "lead",
    }
    feedback = second["messages"][-1]["content"]
    assert "line: Input should be a valid integer" in feedback


async def test_native_non_strict_schema_without_streaming(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.add(Reply(body=completion('{"result": [{"file": "b.py"}]}')))
    async with OpenAIChatModel("gpt-test", api_key=KEY, base_url=fake_openai.url) as model:
        msg = await agent_for(model, tmp_path, stream=False).call("x", CTX, output_type=list[Loose])
    assert msg.output == [Loose(file="b.py", line=0)]
    sent = format_of(fake_openai.requests[0].body)["json_schema"]
    assert sent["strict"] is False  # a default makes a property optional: not strict-compatible
    assert sent["schema"]["required"] == ["result"]  # a list is wrapped in an object
    assert sent["name"] == "list_Loose_"  # made safe for the endpoint


async def test_tool_mode_endpoint_gets_a_final_result_tool(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    args = json.dumps({"file": "c.py", "line": 7})
    fake_openai.add(Reply(body=completion(None, [function_call("call_1", "final_result", args)])))
    model = OpenAIChatModel(
        "qwen-test", api_key=KEY, base_url=fake_openai.url, provider="openai-compatible"
    )
    async with model:
        assert model.structured_output == "tool"
        msg = await agent_for(model, tmp_path, stream=False).call("x", CTX, output_type=Finding)
    assert msg.output == Finding(file="c.py", line=7)
    body = fake_openai.requests[0].body
    assert "response_format" not in body
    [final] = [t["function"] for t in body["tools"] if t["function"]["name"] == "final_result"]
    assert final["parameters"] == Finding.model_json_schema()


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ModelConfigurationError, match="structured_output must be"):
        OpenAIChatModel("m", api_key=KEY, base_url="http://127.0.0.1:9", structured_output="json")  # type: ignore[arg-type]
