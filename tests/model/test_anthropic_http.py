"""AnthropicChatModel against a real local HTTP server speaking the Messages protocol."""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any

import pytest

from agentscope_teams.errors import (
    AuthenticationError,
    ModelConfigurationError,
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelServerError,
    RateLimitError,
)
from agentscope_teams.message import (
    AssistantMsg,
    DataBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMsg,
)
from agentscope_teams.model import (
    RAW_ARGUMENTS_KEY,
    ModelRequest,
    ModelResponse,
    StreamItem,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
    model_from_string,
)
from agentscope_teams.model.anthropic import AnthropicChatModel

from .fake_openai import FakeOpenAI, Reply, free_port

KEY = "sk-ant-test-SECRET-0123456789"
FAST = {"retry-after-ms": "1"}  # the SDK waits what the server asks: keep retries quick


def base(server: FakeOpenAI) -> str:
    return server.url.removesuffix("/v1")


def make_model(server: FakeOpenAI | str, **kw: Any) -> AnthropicChatModel:
    url = server if isinstance(server, str) else base(server)
    kw.setdefault("max_retries", 2)
    return AnthropicChatModel("claude-test", api_key=KEY, base_url=url, **kw)


def ask(text: str = "hello", **kw: Any) -> ModelRequest:
    return ModelRequest(system_prompt="be brief", messages=[UserMsg(text)], **kw)


def message(content: list[dict[str, Any]], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop,
        "usage": {"input_tokens": 20, "output_tokens": 5, "cache_read_input_tokens": 3},
    }


def error(kind: str, text: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text}}


def events(*blocks: tuple[str, dict[str, Any]], stop: str = "end_turn") -> list[Any]:
    start = message([], stop="")
    start["usage"] = {"input_tokens": 20, "output_tokens": 1}
    return [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
        *blocks,
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def block_start(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def block_delta(index: int, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


async def collect(model: AnthropicChatModel, request: ModelRequest) -> list[StreamItem]:
    return [item async for item in model.stream(request)]


async def test_text_usage_and_request_shape(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(body=message([{"type": "text", "text": "hi there"}])))
    async with make_model(fake_openai) as model:
        response = await model.generate(ask(temperature=0.3))
    assert response.text == "hi there"
    assert response.stop_reason == "end_turn"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (23, 5)
    [received] = fake_openai.requests
    assert received.path == "/v1/messages"
    assert KEY in (received.headers.get("x-api-key"), received.headers.get("authorization", "")[7:])
    assert received.body["system"] == "be brief"
    assert received.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    ]
    assert received.body["max_tokens"] == 4096 and received.body["temperature"] == 0.3


async def test_tools_out_results_in_and_images(fake_openai: FakeOpenAI) -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}
    fake_openai.add(Reply(body=message([call], stop="tool_use")), Reply(body=message([])))
    tools = [ToolSchema(name="read_file", description="Read a file", parameters={"type": "object"})]
    image = DataBlock(media_type="image/png", data="aGk=")
    async with make_model(fake_openai) as model:
        first = await model.generate(ask("read a.py", tools=tools))
        assert first.stop_reason == "tool_use"
        assert first.tool_calls == [
            ToolUseBlock(id="toolu_1", name="read_file", input={"path": "a.py"})
        ]
        history = [
            UserMsg([TextBlock(text="read a.py"), image]),
            AssistantMsg(list(first.content)),
            UserMsg([ToolResultBlock(tool_use_id="toolu_1", output="x = 1", is_error=True)]),
            UserMsg("and then?"),
        ]
        await model.generate(ModelRequest(messages=history, tools=tools))
    sent = fake_openai.requests[1].body
    assert sent["tools"] == [
        {"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}}
    ]
    assert "system" not in sent
    assert sent["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "read a.py"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "aGk="},
                },
            ],
        },
        {"role": "assistant", "content": [call]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "x = 1",
                    "is_error": True,
                },
                {"type": "text", "text": "and then?"},
            ],
        },
    ]


async def test_streamed_text_and_tool_input(fake_openai: FakeOpenAI) -> None:
    tool = {"type": "tool_use", "id": "toolu_a", "name": "ls", "input": {}}
    bad = {"type": "tool_use", "id": "toolu_b", "name": "cat", "input": {}}
    fake_openai.add(
        Reply(
            sse=events(
                block_start(0, {"type": "text", "text": ""}),
                block_delta(0, {"type": "text_delta", "text": "Hel"}),
                block_delta(0, {"type": "text_delta", "text": "lo"}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                block_start(1, tool),
                block_delta(1, {"type": "input_json_delta", "partial_json": '{"pa'}),
                block_delta(1, {"type": "input_json_delta", "partial_json": 'th": "."}'}),
                block_start(2, bad),
                block_delta(2, {"type": "input_json_delta", "partial_json": "{oops"}),
                stop="tool_use",
            )
        )
    )
    async with make_model(fake_openai) as model:
        items = await collect(model, ask())
    assert [i.text for i in items if isinstance(i, TextDelta)] == ["Hel", "lo"]
    deltas = [i for i in items if isinstance(i, ToolCallDelta)]
    assert [(d.index, d.id, d.name) for d in deltas if d.id] == [
        (0, "toolu_a", "ls"),
        (1, "toolu_b", "cat"),
    ]
    assert "".join(d.arguments for d in deltas if d.index == 0) == '{"path": "."}'
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.text == "Hello" and final.stop_reason == "tool_use"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (20, 9)
    assert final.tool_calls == [
        ToolUseBlock(id="toolu_a", name="ls", input={"path": "."}),
        ToolUseBlock(id="toolu_b", name="cat", input={RAW_ARGUMENTS_KEY: "{oops"}),
    ]
    assert fake_openai.requests[0].body["stream"] is True


async def test_401_is_not_retried_and_the_key_is_scrubbed(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(401, error("authentication_error", f"invalid x-api-key {KEY}")))
    async with make_model(fake_openai) as model:
        with pytest.raises(AuthenticationError) as info:
            await model.generate(ask())
    assert "check the api_key argument" in str(info.value)
    assert len(fake_openai.requests) == 1
    err = info.value
    assert (err.status_code, err.code, err.model) == (401, "authentication_error", "claude-test")
    assert err.body is not None and "***" in err.body
    assert err.__cause__ is None and err.__context__ is None
    shown = "".join(traceback.format_exception(err)) + repr(err) + repr(vars(err))
    assert KEY not in shown


async def test_429_with_retry_after_then_success(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(
        Reply(429, error("rate_limit_error", "slow down"), headers={"retry-after-ms": "5"}),
        Reply(body=message([{"type": "text", "text": "ok"}])),
    )
    async with make_model(fake_openai) as model:
        assert (await model.generate(ask())).text == "ok"
    retry_counts = [r.headers["x-stainless-retry-count"] for r in fake_openai.requests]
    assert retry_counts == ["0", "1"]


@pytest.mark.parametrize(
    ("status", "kind", "code"),
    [
        (429, RateLimitError, "rate_limit_error"),
        (500, ModelServerError, "api_error"),
        (529, ModelServerError, "overloaded_error"),
    ],
)
async def test_exhausted_retries_count_the_attempts(
    fake_openai: FakeOpenAI, status: int, kind: type[ModelError], code: str
) -> None:
    fake_openai.add(*[Reply(status, error(code, "nope"), headers=FAST) for _ in range(3)])
    async with make_model(fake_openai, max_retries=2) as model:
        with pytest.raises(kind, match="after 3 attempts") as info:
            await model.generate(ask())
    assert len(fake_openai.requests) == 3
    assert (info.value.status_code, info.value.code) == (status, code)
    assert "nope" in str(info.value)


async def test_overloaded_then_success_while_streaming(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(
        Reply(529, error("overloaded_error", "Overloaded"), headers=FAST),
        Reply(sse=events(block_start(0, {"type": "text", "text": "ok"}))),
    )
    async with make_model(fake_openai) as model:
        items = await collect(model, ask())
    final = items[-1]
    assert isinstance(final, ModelResponse) and final.text == "ok"
    assert len(fake_openai.requests) == 2


async def test_error_event_mid_stream(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(
        Reply(
            sse=[
                *events(block_delta(0, {"type": "text_delta", "text": "par"}))[:2],
                block_delta(0, {"type": "text_delta", "text": "par"}),
                ("error", error("overloaded_error", "Overloaded")),
            ]
        )
    )
    items: list[StreamItem] = []
    async with make_model(fake_openai) as model:
        with pytest.raises(ModelServerError, match="Overloaded") as info:
            async for item in model.stream(ask()):
                items.append(item)
    assert items == [TextDelta(text="par")]
    assert (info.value.status_code, info.value.code) == (None, "overloaded_error")
    assert len(fake_openai.requests) == 1  # not retried once deltas were sent


@pytest.mark.parametrize(
    ("body", "content_type"),
    [("{not json", "application/json"), ('{"type": "message", "content": "text?"}', None)],
)
async def test_malformed_responses(
    fake_openai: FakeOpenAI, body: str, content_type: str | None
) -> None:
    fake_openai.add(Reply(body=body, content_type=content_type))
    async with make_model(fake_openai) as model:
        with pytest.raises(ModelResponseError) as info:
            await model.generate(ask())
    assert (info.value.model, info.value.base_url) == ("claude-test", base(fake_openai))


async def test_stream_that_never_starts_a_message(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(sse=[("message_stop", {"type": "message_stop"})]))
    async with make_model(fake_openai) as model:
        with pytest.raises(ModelResponseError, match="never started a message"):
            await collect(model, ask())


async def test_connection_refused_is_retried_then_named(caplog: pytest.LogCaptureFixture) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    caplog.set_level(logging.DEBUG)
    async with make_model(url, max_retries=1) as model:
        with pytest.raises(ModelConnectionError, match="after 2 attempts") as info:
            await model.generate(ask())
    assert url in str(info.value)
    assert KEY not in str(info.value)
    assert caplog.records, "expected DEBUG records from the SDK / HTTP client"
    for record in caplog.records:
        assert KEY not in record.getMessage() and KEY not in repr(record.__dict__)


def test_model_strings_and_claude_aliases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_DEFAULT_OPUS_MODEL", raising=False)
    monkeypatch.setenv("ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-haiku-custom")
    built = {
        s: model_from_string(s)
        for s in ("anthropic:claude-x", "claude-sonnet-4-5", "sonnet", "opus", "haiku")
    }
    assert all(isinstance(m, AnthropicChatModel) for m in built.values())
    assert {s: m.model_name for s, m in built.items()} == {
        "anthropic:claude-x": "claude-x",
        "claude-sonnet-4-5": "claude-sonnet-4-5",
        "sonnet": "claude-sonnet-4-5",
        "opus": "claude-opus-4-5",
        "haiku": "claude-haiku-custom",
    }
    assert KEY not in repr(built["sonnet"])


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelConfigurationError, match="set the ANTHROPIC_API_KEY"):
        model_from_string("sonnet")
    with pytest.raises(ModelConfigurationError, match="'anthropic:<model>'"):
        model_from_string("anthropic:")


def test_a_spec_alias_builds_claude_or_falls_back_without_a_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentscope_teams.model import ScriptedModel
    from agentscope_teams.subagents.spawn import ModelPool
    from agentscope_teams.subagents.spec import SubagentSpec

    spec = SubagentSpec.model_validate({"name": "x", "description": "d", "model": "haiku"})
    parent = ScriptedModel(["hi"])
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert ModelPool(parent).for_spec(spec) is parent  # no key: the parent's model, warned
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    built = ModelPool(parent).for_spec(spec)
    assert isinstance(built, AnthropicChatModel) and built.model_name == "claude-haiku-4-5"


def test_without_the_extra_the_error_names_it() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['anthropic'] = None\n"
        "from agentscope_teams import MissingDependencyError, model_from_string\n"
        "try:\n    model_from_string('sonnet', api_key='k')\n"
        "except MissingDependencyError as e:\n    print(e.extra, '|', e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "anthropic | anthropic models needs anthropic, not installed: "
        "run `pip install 'agentscope-teams[anthropic]'`"
    )


async def test_a_tool_input_sent_whole_at_block_start(fake_openai: FakeOpenAI) -> None:
    whole = {"type": "tool_use", "id": "toolu_w", "name": "ls", "input": {"path": "src"}}
    fake_openai.add(Reply(sse=events(block_start(0, whole), stop="tool_use")))
    async with make_model(fake_openai) as model:
        items = await collect(model, ask())
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.tool_calls == [ToolUseBlock(id="toolu_w", name="ls", input={"path": "src"})]


async def test_streamed_input_usage_reported_in_message_delta(fake_openai: FakeOpenAI) -> None:
    """message_delta's usage is cumulative and may carry the input counts too (the SDK's own
    accumulator takes them): they replace message_start's."""
    sse = events(block_start(0, {"type": "text", "text": "hi"}))
    sse[0][1]["message"]["usage"] = {"input_tokens": 0, "output_tokens": 0}
    sse[-2][1]["usage"] = {"input_tokens": 40, "cache_read_input_tokens": 2, "output_tokens": 9}
    fake_openai.add(Reply(sse=sse))
    async with make_model(fake_openai) as model:
        final = (await collect(model, ask()))[-1]
    assert isinstance(final, ModelResponse)
    assert (final.usage.input_tokens, final.usage.output_tokens) == (42, 9)


@pytest.mark.parametrize("given", ["not json", ["a", "b"], 7])
async def test_a_tool_input_that_is_not_an_object_is_kept_raw(
    fake_openai: FakeOpenAI, given: object
) -> None:
    """A tool input that is not a JSON object reaches the tool layer raw (it reports it to the
    model), whole or streamed, instead of becoming an empty input the tool runs with."""
    call = {"type": "tool_use", "id": "toolu_x", "name": "ls", "input": given}
    fake_openai.add(
        Reply(body=message([call], stop="tool_use")),
        Reply(sse=events(block_start(0, call), stop="tool_use")),
    )
    async with make_model(fake_openai) as model:
        whole = await model.generate(ask())
        streamed = (await collect(model, ask()))[-1]
    assert isinstance(streamed, ModelResponse)
    raw = given if isinstance(given, str) else json.dumps(given)
    for response in (whole, streamed):
        assert response.tool_calls == [
            ToolUseBlock(id="toolu_x", name="ls", input={RAW_ARGUMENTS_KEY: raw})
        ]
