from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from agentscope_teams.errors import ModelError, RateLimitError
from agentscope_teams.message import TextBlock, ToolUseBlock, UserMsg
from agentscope_teams.model import (
    ChatModel,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    TextDelta,
    ToolCallDelta,
    Usage,
)


def ask(text: str) -> ModelRequest:
    return ModelRequest(messages=[UserMsg(text)])


async def test_replays_in_order_and_strings_are_text() -> None:
    model = ScriptedModel([ScriptedModel.tool_call("read_file", {"path": "a.py"}, id="c1"), "done"])
    assert isinstance(model, ChatModel)
    first = await model.generate(ask("read"))
    assert first.stop_reason == "tool_use"
    assert first.tool_calls == [ToolUseBlock(id="c1", name="read_file", input={"path": "a.py"})]
    second = await model.generate(ask("and?"))
    assert (second.text, second.stop_reason, second.model) == ("done", "end_turn", "scripted")
    assert model.remaining == 0


async def test_exhausted_script_says_how_many_were_used() -> None:
    model = ScriptedModel(["a", "b"], name="planner")
    await model.generate(ask("1"))
    await model.generate(ask("2"))
    with pytest.raises(ModelError, match=r"'planner'.*call #3.*all 2 scripted responses were used"):
        await model.generate(ask("3"))


async def test_records_deep_copies_of_requests() -> None:
    model = ScriptedModel(["ok"])
    request = ask("original")
    await model.generate(request)
    request.messages.append(UserMsg("added later"))
    request.metadata["x"] = 1
    [seen] = model.requests
    assert [m.get_text_content() for m in seen.messages] == ["original"]
    assert seen.metadata == {}


async def test_a_recorded_request_shares_the_immutable_messages() -> None:
    """Messages are immutable, so a recorded request holds the messages themselves (a new list):
    recording costs one reference per message, not a copy of each (issue 26, h-wake5; a copy
    of every message of the session per request was 71% of a wake-up's time from the session's
    load to the model's request)."""
    model = ScriptedModel(["ok"])
    request = ModelRequest(messages=[UserMsg(f"m{i}") for i in range(3)])
    await model.generate(request)
    [seen] = model.requests
    assert seen.messages is not request.messages
    assert all(a is b for a, b in zip(seen.messages, request.messages, strict=True))


async def test_returned_responses_do_not_alias_the_script() -> None:
    scripted = ScriptedModel.text("hi")
    model = ScriptedModel([scripted])
    response = await model.generate(ask("x"))
    response.content.append(TextBlock(text="!"))
    assert scripted.text == "hi"


async def test_function_script_sync_and_async() -> None:
    def echo(req: ModelRequest) -> str:
        return "echo: " + req.messages[-1].get_text_content()

    async def shout(req: ModelRequest) -> ModelResponse:
        await anyio.lowlevel.checkpoint()
        return ScriptedModel.text(req.messages[-1].get_text_content().upper())

    assert (await ScriptedModel(echo).generate(ask("hi"))).text == "echo: hi"
    assert (await ScriptedModel(shout).generate(ask("hi"))).text == "HI"
    mixed = ScriptedModel([echo, shout])
    assert [(await mixed.generate(ask("a"))).text for _ in range(2)] == ["echo: a", "A"]
    assert ScriptedModel(echo).remaining is None


async def test_function_must_return_a_response() -> None:
    model = ScriptedModel(lambda req: 42)  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="returned int"):
        await model.generate(ask("x"))


async def test_exception_items_are_raised() -> None:
    model = ScriptedModel([RateLimitError("slow down"), "recovered"])
    with pytest.raises(RateLimitError):
        await model.generate(ask("x"))
    assert (await model.generate(ask("y"))).text == "recovered"


def test_a_bare_string_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"wrap the response in \[\.\.\.\]"):
        ScriptedModel("hello")  # a str is a Sequence, so only a runtime check catches it


async def test_stream_yields_words_tool_calls_then_response() -> None:
    response = ScriptedModel.tool_calls(
        [("ls", {"path": "."}), ToolUseBlock(id="c2", name="cat", input={"f": "x"})],
        text="Let me  look.",
        usage=Usage(input_tokens=3, output_tokens=4),
    )
    model = ScriptedModel([response])
    items = [item async for item in model.stream(ask("x"))]
    texts = [i.text for i in items if isinstance(i, TextDelta)]
    assert texts == ["Let ", "me  ", "look."]
    calls = [i for i in items if isinstance(i, ToolCallDelta)]
    assert [(c.index, c.name, c.arguments) for c in calls] == [
        (0, "ls", '{"path": "."}'),
        (1, "cat", '{"f": "x"}'),
    ]
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.text == "Let me  look."
    assert final.usage.output_tokens == 4
    assert len(model.requests) == 1


async def test_shared_list_is_consumed_in_arrival_order() -> None:
    model = ScriptedModel(["first", "second", "third"], delay=0.01)
    results: dict[str, str] = {}

    async def call(tag: str) -> None:
        results[tag] = (await model.generate(ask(tag))).text

    async with anyio.create_task_group() as tg:
        for tag in ("a", "b", "c"):
            tg.start_soon(call, tag)
    arrival = [r.messages[0].get_text_content() for r in model.requests]
    assert [results[tag] for tag in arrival] == ["first", "second", "third"]


async def test_function_form_is_safe_for_concurrent_sessions() -> None:
    model = ScriptedModel(lambda req: "reply to " + req.messages[-1].get_text_content(), delay=0.01)
    results: dict[str, str] = {}

    async def call(tag: str) -> None:
        results[tag] = (await model.generate(ask(tag))).text

    async with anyio.create_task_group() as tg:
        for tag in ("a", "b", "c"):
            tg.start_soon(call, tag)
    assert results == {t: f"reply to {t}" for t in "abc"}


def test_helpers_generate_ids_and_stop_reasons() -> None:
    a, b = ScriptedModel.tool_call("f").tool_calls[0], ScriptedModel.tool_call("f").tool_calls[0]
    assert a.id != b.id and a.id.startswith("call_")
    assert ScriptedModel.text("").content == []
    assert ScriptedModel.tool_calls([("f", {})]).stop_reason == "tool_use"
