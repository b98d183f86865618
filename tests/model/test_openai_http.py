"""OpenAIChatModel against a real local HTTP server speaking the chat-completions protocol."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterator
from typing import Any

import pytest

from agentscope_teams.errors import (
    AuthenticationError,
    ModelConfigurationError,
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
    RateLimitError,
)
from agentscope_teams.message import AssistantMsg, ToolResultBlock, ToolUseBlock, UserMsg
from agentscope_teams.model import (
    RAW_ARGUMENTS_KEY,
    ModelRequest,
    ModelResponse,
    OpenAIChatModel,
    StreamItem,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
)

from .fake_openai import FakeOpenAI, Reply, chunk, completion, free_port, function_call

KEY = "sk-test-SECRET-0123456789abcdef"
LOGGERS = ("", "openai", "httpx", "httpx2", "httpcore", "httpcore2", "agentscope_teams")


class _WaitRecorder(logging.Handler):
    """Collects the waits the SDK announces before each retry ("Retrying request in %f ...")."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.waits: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("Retrying request in"):
            self.waits.append(float(record.args[0]))  # type: ignore[index]


@pytest.fixture
def sleeps() -> Iterator[list[float]]:
    """The retry waits of the SDK (which retries itself, really waiting)."""
    logger = logging.getLogger("openai._base_client")
    recorder, level = _WaitRecorder(), logger.level
    logger.addHandler(recorder)
    logger.setLevel(logging.DEBUG if level == logging.NOTSET else min(level, logging.INFO))
    yield recorder.waits
    logger.removeHandler(recorder)
    logger.setLevel(level)


FAST = {"retry-after-ms": "1"}  # the SDK waits what the server asks: keep retries quick


def fields(err: ModelError) -> dict[str, Any]:
    """The structured fields of a model error."""
    names = ("status_code", "code", "body", "model", "base_url")
    return {name: getattr(err, name) for name in names}


def make_model(server: FakeOpenAI | str, **kw: Any) -> OpenAIChatModel:
    url = server if isinstance(server, str) else server.url
    kw.setdefault("max_retries", 2)
    return OpenAIChatModel("fake-model", api_key=KEY, base_url=url, **kw)


def ask(text: str = "hello", **kw: Any) -> ModelRequest:
    return ModelRequest(system_prompt="be brief", messages=[UserMsg(text)], **kw)


async def collect(model: OpenAIChatModel, request: ModelRequest) -> list[StreamItem]:
    return [item async for item in model.stream(request)]


async def test_plain_text(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(body=completion("hi there")))
    async with make_model(fake_openai) as model:
        response = await model.generate(ask(max_tokens=50, temperature=0.2))
    assert response.text == "hi there"
    assert response.stop_reason == "end_turn"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)
    assert response.model == "fake-model"
    [received] = fake_openai.requests
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == f"Bearer {KEY}"
    assert received.body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hello"},
    ]
    assert received.body["max_tokens"] == 50
    assert received.body["temperature"] == 0.2
    assert "tools" not in received.body


async def test_streamed_text(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(
        Reply(
            sse=[
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": "Hel"}),
                chunk({"content": "lo"}),
                chunk({}, finish_reason="stop"),
                chunk(None),
                "[DONE]",
            ]
        )
    )
    async with make_model(fake_openai) as model:
        items = await collect(model, ask())
    assert [i.text for i in items if isinstance(i, TextDelta)] == ["Hel", "lo"]
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.text == "Hello"
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 7
    body = fake_openai.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_tool_calls_out_and_results_in(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(
        Reply(
            body=completion(
                None,
                [function_call("call_1", "read_file", '{"path": "a.py"}')],
                finish_reason="tool_calls",
            )
        ),
        Reply(body=completion("done")),
    )
    tools = [ToolSchema(name="read_file", description="Read a file", parameters={"type": "object"})]
    async with make_model(fake_openai) as model:
        first = await model.generate(ask("read a.py", tools=tools))
        assert first.stop_reason == "tool_use"
        assert first.tool_calls == [
            ToolUseBlock(id="call_1", name="read_file", input={"path": "a.py"})
        ]
        history = [
            UserMsg("read a.py"),
            AssistantMsg(list(first.content)),
            UserMsg([ToolResultBlock(tool_use_id="call_1", name="read_file", output="x = 1")]),
        ]
        await model.generate(ModelRequest(messages=history, tools=tools))
    sent = fake_openai.requests[1].body
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": {"type": "object"},
            },
        }
    ]
    assert sent["messages"] == [
        {"role": "user", "content": "read a.py"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "x = 1"},
    ]


async def test_streamed_tool_calls(fake_openai: FakeOpenAI) -> None:
    call0 = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "ls"}}
    call1 = {"index": 1, "id": "call_b", "function": {"name": "cat", "arguments": ""}}
    fake_openai.add(
        Reply(
            sse=[
                chunk({"role": "assistant", "tool_calls": [call0]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"pa'}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'th": "."}'}}]}),
                chunk({"tool_calls": [call1]}),
                chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{oops"}}]}),
                chunk({}, finish_reason="tool_calls"),
                chunk(None),
                "[DONE]",
            ]
        )
    )
    async with make_model(fake_openai) as model:
        items = await collect(model, ask())
    deltas = [i for i in items if isinstance(i, ToolCallDelta)]
    assert [(d.index, d.id, d.name) for d in deltas[:1]] == [(0, "call_a", "ls")]
    assert "".join(d.arguments for d in deltas if d.index == 0) == '{"path": "."}'
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.stop_reason == "tool_use"
    assert final.tool_calls == [
        ToolUseBlock(id="call_a", name="ls", input={"path": "."}),
        ToolUseBlock(id="call_b", name="cat", input={RAW_ARGUMENTS_KEY: "{oops"}),
    ]


async def test_unparseable_tool_arguments_do_not_crash(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(body=completion(None, [function_call("c1", "f", "{not json")])))
    async with make_model(fake_openai) as model:
        response = await model.generate(ask())
    assert response.tool_calls == [
        ToolUseBlock(id="c1", name="f", input={RAW_ARGUMENTS_KEY: "{not json"})
    ]
    assert response.stop_reason == "tool_use"


@pytest.mark.parametrize("status", [401, 403])
async def test_authentication_errors(fake_openai: FakeOpenAI, status: int) -> None:
    fake_openai.add(Reply(status, {"error": {"message": f"Incorrect API key provided: {KEY}"}}))
    async with make_model(fake_openai) as model:
        with pytest.raises(AuthenticationError) as info:
            await model.generate(ask())
    message = str(info.value)
    assert "invalid or expired" in message
    assert "check the api_key argument" in message
    assert KEY not in message
    assert len(fake_openai.requests) == 1
    got = fields(info.value)
    assert got["status_code"] == status and got["code"] is None
    assert got["model"] == "fake-model" and got["base_url"] == fake_openai.url
    assert got["body"] == '{"message": "Incorrect API key provided: ***"}'


async def test_errors_carry_the_provider_code_and_a_body_excerpt(fake_openai: FakeOpenAI) -> None:
    error = {"message": "You exceeded your quota", "type": "insufficient_quota", "code": "quota"}
    fake_openai.add(Reply(429, {"error": {**error, "padding": "x" * 2000}}))
    async with make_model(fake_openai, max_retries=0) as model:
        with pytest.raises(RateLimitError) as info:
            await model.generate(ask())
    got = fields(info.value)
    assert got["status_code"] == 429 and got["code"] == "quota"
    assert got["body"].startswith('{"message": "You exceeded your quota"')
    assert got["body"].endswith("...") and len(got["body"]) == 503  # cut to 500 characters
    assert "after 1 attempt" in str(info.value)  # the message is unchanged by the fields


async def test_auth_error_names_env_var(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    fake_openai.add(Reply(401, {"error": {"message": "bad key"}}))
    async with OpenAIChatModel("m", base_url=fake_openai.url) as model:
        with pytest.raises(AuthenticationError, match="check OPENAI_API_KEY"):
            await model.generate(ask())


@pytest.mark.parametrize(
    ("header", "wait"), [({"Retry-After": "1"}, 1.0), ({"retry-after-ms": "20"}, 0.02)]
)
async def test_429_with_retry_after_then_success(
    fake_openai: FakeOpenAI, sleeps: list[float], header: dict[str, str], wait: float
) -> None:
    fake_openai.add(
        Reply(429, {"error": {"message": "slow down"}}, headers=header),
        Reply(body=completion("ok")),
    )
    async with make_model(fake_openai) as model:
        response = await model.generate(ask())
    assert response.text == "ok"
    assert len(fake_openai.requests) == 2
    assert sleeps == [wait]  # the header wins over the backoff schedule


async def test_a_retry_after_beyond_two_minutes_is_not_waited_for(
    fake_openai: FakeOpenAI, sleeps: list[float]
) -> None:
    fake_openai.add(Reply(503, {}, headers={"Retry-After": "3600"}), Reply(body=completion("ok")))
    async with make_model(fake_openai) as model:
        with pytest.raises(ModelServerError, match="after 1 attempt"):
            await model.generate(ask())
    assert sleeps == [] and len(fake_openai.requests) == 1


async def test_500_then_success(fake_openai: FakeOpenAI, sleeps: list[float]) -> None:
    fake_openai.add(Reply(500, {"error": {"message": "boom"}}), Reply(body=completion("ok")))
    async with make_model(fake_openai) as model:
        assert (await model.generate(ask())).text == "ok"
    assert len(fake_openai.requests) == 2
    assert len(sleeps) == 1
    assert 0.375 <= sleeps[0] <= 0.5  # first backoff step (0.5 s), with jitter


async def test_streaming_retries_before_first_chunk(
    fake_openai: FakeOpenAI, sleeps: list[float]
) -> None:
    fake_openai.add(
        Reply(502, "bad gateway", content_type="text/plain", headers=FAST),
        Reply(sse=[chunk({"content": "ok"}, "stop"), "[DONE]"]),
    )
    async with make_model(fake_openai) as model:
        items = await collect(model, ask())
    final = items[-1]
    assert isinstance(final, ModelResponse) and final.text == "ok"
    assert len(fake_openai.requests) == 2


@pytest.mark.parametrize(("status", "error"), [(429, RateLimitError), (500, ModelServerError)])
async def test_exhausted_retries(
    fake_openai: FakeOpenAI, sleeps: list[float], status: int, error: type[ModelError]
) -> None:
    fake_openai.add(
        *[Reply(status, {"error": {"message": "nope"}}, headers=FAST) for _ in range(3)]
    )
    async with make_model(fake_openai, max_retries=2) as model:
        with pytest.raises(error, match="after 3 attempts") as info:
            await model.generate(ask())
    assert len(fake_openai.requests) == 3
    assert len(sleeps) == 2
    assert "nope" in str(info.value)
    assert fields(info.value) == {
        "status_code": status,
        "code": None,
        "body": '{"message": "nope"}',
        "model": "fake-model",
        "base_url": fake_openai.url,
    }


async def test_backoff_grows(fake_openai: FakeOpenAI, sleeps: list[float]) -> None:
    fake_openai.add(*[Reply(500, {}) for _ in range(3)])
    async with make_model(fake_openai, max_retries=2) as model:
        with pytest.raises(ModelServerError, match="after 3 attempts"):
            await model.generate(ask())
    assert len(sleeps) == 2
    assert 0.375 <= sleeps[0] <= 0.5 and 0.75 <= sleeps[1] <= 1.0


async def test_client_errors_are_not_retried(fake_openai: FakeOpenAI) -> None:
    error = {"message": "context too long", "code": "context_length_exceeded"}
    fake_openai.add(Reply(400, {"error": error}))
    async with make_model(fake_openai) as model:
        with pytest.raises(ModelError, match="context too long") as info:
            await model.generate(ask())
    assert len(fake_openai.requests) == 1
    assert (info.value.status_code, info.value.code) == (400, "context_length_exceeded")


async def test_404_is_a_configuration_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(404, {"error": {"message": "model not found"}}))
    async with make_model(fake_openai) as model:
        with pytest.raises(ModelConfigurationError, match="fake-model"):
            await model.generate(ask())


async def test_no_choices(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(body={"id": "x", "object": "chat.completion", "choices": []}))
    async with make_model(fake_openai) as model:
        with pytest.raises(ModelResponseError, match="response has no choices") as info:
            await model.generate(ask())
    assert "fake-model" in str(info.value)
    assert (info.value.model, info.value.base_url) == ("fake-model", fake_openai.url)


async def test_stream_without_choices(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(sse=[chunk(None), "[DONE]"]))
    async with make_model(fake_openai) as model:
        with pytest.raises(ModelResponseError, match="response has no choices"):
            await collect(model, ask())


@pytest.mark.parametrize(
    ("body", "content_type"),
    [("{not json", "application/json"), ("<html>oops</html>", "text/html"), ("[1, 2]", None)],
)
async def test_invalid_json(fake_openai: FakeOpenAI, body: str, content_type: str | None) -> None:
    fake_openai.add(Reply(body=body, content_type=content_type))
    async with make_model(fake_openai) as model:
        with pytest.raises(ModelResponseError) as info:
            await model.generate(ask())
    assert (info.value.model, info.value.base_url) == ("fake-model", fake_openai.url)
    if content_type == "application/json":  # the body that failed to decode, as received
        assert info.value.body == body


async def test_invalid_json_in_stream(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(sse=[chunk({"content": "a"}), "{broken", "[DONE]"]))
    async with make_model(fake_openai) as model:
        with pytest.raises(ModelResponseError):
            await collect(model, ask())


async def test_connection_refused(sleeps: list[float]) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    async with make_model(url, max_retries=1) as model:
        with pytest.raises(ModelConnectionError) as info:
            await model.generate(ask())
    assert url in str(info.value)
    assert len(sleeps) == 1  # retried once
    assert fields(info.value) == {
        "status_code": None,
        "code": None,
        "body": None,
        "model": "fake-model",
        "base_url": url,
    }


async def test_timeout(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(*[Reply(body=completion("late"), delay=30) for _ in range(2)])
    async with make_model(fake_openai, timeout=0.2, max_retries=1) as model:
        with pytest.raises(ModelTimeoutError, match=r"did not answer within 0.2s \(2 attempts\)"):
            await model.generate(ask())
    assert len(fake_openai.requests) == 2  # the SDK retries a timeout too


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    yield caplog


async def test_key_never_leaks(
    fake_openai: FakeOpenAI, debug_logs: pytest.LogCaptureFixture, sleeps: list[float]
) -> None:
    echo = {"error": {"message": f"key {KEY} is wrong", "key": KEY}}
    fake_openai.add(
        Reply(body=completion("ok")),
        Reply(429, echo, headers={"Retry-After": "0"}),
        Reply(sse=[chunk({"content": "ok"}, "stop"), "[DONE]"]),
        Reply(401, echo),
        Reply(500, echo),
        Reply(body=f'{{"broken": "{KEY}"', content_type="application/json"),
    )
    errors: list[BaseException] = []
    async with make_model(fake_openai, max_retries=0) as model:
        assert KEY not in repr(model) and KEY not in str(model)
        await model.generate(ask())
        with pytest.raises(RateLimitError) as e1:
            await model.generate(ask())
        await collect(model, ask())
        for _ in range(3):
            with pytest.raises(ModelError) as info:
                await model.generate(ask())
            errors.append(info.value)
        errors.append(e1.value)
    async with make_model(f"http://127.0.0.1:{free_port()}/v1", max_retries=1) as model:
        with pytest.raises(ModelConnectionError) as info:
            await model.generate(ask())
        errors.append(info.value)
    assert [type(e) for e in errors] == [
        AuthenticationError,
        ModelServerError,
        ModelResponseError,
        RateLimitError,
        ModelConnectionError,
    ]
    for err in errors:
        assert err.__cause__ is None and err.__context__ is None
        shown = "".join(traceback.format_exception(err)) + repr(err)
        assert KEY not in shown
        assert isinstance(err, ModelError) and KEY not in repr(fields(err))
    assert [e.status_code for e in errors if isinstance(e, ModelError)] == [
        401,
        500,
        None,
        429,
        None,
    ]
    assert all(
        e.body and "***" in e.body for e in errors[:4] if isinstance(e, ModelError)
    )  # the key was in each body, and was scrubbed
    assert debug_logs.records, "expected DEBUG records from the SDK / HTTP client"
    for record in debug_logs.records:
        assert KEY not in record.getMessage()
        assert KEY not in repr(record.__dict__)


async def test_error_event_mid_stream(fake_openai: FakeOpenAI, sleeps: list[float]) -> None:
    fake_openai.add(
        Reply(sse=[chunk({"content": "par"}), {"error": {"message": "overloaded"}}, "[DONE]"])
    )
    items: list[StreamItem] = []
    async with make_model(fake_openai) as model:
        with pytest.raises(ModelServerError, match="overloaded") as info:
            async for item in model.stream(ask()):
                items.append(item)
    assert info.value.status_code is None and info.value.model == "fake-model"
    assert items == [TextDelta(text="par")]
    assert len(fake_openai.requests) == 1 and sleeps == []  # not retried once deltas were sent


async def test_connection_dropped_mid_stream(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(sse=[chunk({"content": "par"})], cut_short=True))
    async with make_model(fake_openai) as model:
        with pytest.raises(ModelConnectionError, match="lost the response stream"):
            await collect(model, ask())
    assert len(fake_openai.requests) == 1


async def test_effort_is_sent_to_reasoning_models_only(fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(body=completion("a")), Reply(body=completion("b")))
    async with OpenAIChatModel("o4-mini", api_key=KEY, base_url=fake_openai.url) as reasoning:
        await reasoning.generate(ask(effort="max"))
    async with make_model(fake_openai) as plain:
        await plain.generate(ask(effort="low"))
    first, second = fake_openai.requests
    assert first.body["reasoning_effort"] == "high"  # ours "max" is OpenAI's highest, "high"
    assert "reasoning_effort" not in second.body  # a model without the setting ignores it
