"""A request's input estimate: each message measured once across a loop's steps (short plain text is
measured each time, without pydantic), and measured again when its block list grew; the estimate is
the same as measuring every message afresh, and a message's size is its content's JSON length."""

from __future__ import annotations

import pytest

from agentscope_teams.message import Msg, TextBlock
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.usage import estimate
from agentscope_teams.usage.estimate import estimate_input


def _fresh(request: ModelRequest) -> int:
    chars = len(request.system_prompt) + estimate.tool_chars(request.tools)
    chars += sum(estimate.message_chars(m) for m in request.messages)
    return estimate.tokens(chars) + estimate.PER_MESSAGE * (len(request.messages) + 1)


def test_each_message_is_measured_once_across_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    history = [Msg(name="u", role="user", content=f"message {i} " * 40) for i in range(50)]
    assert all(len(m.content) > estimate.SHORT_TEXT for m in history)
    measured: list[Msg] = []
    measure = estimate.message_chars

    def counted(msg: Msg) -> int:
        measured.append(msg)
        return measure(msg)

    monkeypatch.setattr(estimate, "message_chars", counted)
    first = estimate_input(ModelRequest(messages=history, system_prompt="s"))
    step = [*history, Msg(name="a", role="assistant", content="an answer " * 30)]
    second = estimate_input(ModelRequest(messages=step, system_prompt="s"))
    monkeypatch.undo()
    assert len(measured) == 51  # the second step measured only its new message
    assert first == _fresh(ModelRequest(messages=history, system_prompt="s"))
    assert second == _fresh(ModelRequest(messages=step, system_prompt="s"))


def test_a_message_whose_blocks_grew_is_measured_again() -> None:
    msg = Msg(name="u", role="user", content=[TextBlock(text="one")])
    before = estimate_input(ModelRequest(messages=[msg], system_prompt=""))
    assert isinstance(msg.content, list)
    msg.content.append(TextBlock(text="two " * 300))
    after = estimate_input(ModelRequest(messages=[msg], system_prompt=""))
    assert after == _fresh(ModelRequest(messages=[msg], system_prompt="")) > before


def test_short_text_is_measured_each_time_as_its_json() -> None:
    short = Msg(name="u", role="user", content="hi")
    assert estimate.message_chars(short) == len(short.model_dump_json(include={"content"}))
    assert estimate_input(ModelRequest(messages=[short], system_prompt="")) == _fresh(
        ModelRequest(messages=[short], system_prompt="")
    )
    kept = estimate._MESSAGE_CHARS.get(id(short))  # an id a dead message had may be there
    assert kept is None or kept[0]() is not short  # not kept: measuring it costs less


@pytest.mark.parametrize(
    "content",
    [
        "",
        "plain",
        'quotes " and \\ backslashes / slashes',
        "controls \x00 \x01 \x1f \x7f \b \f \n \r \t",
        "non-ASCII: é 中文 😀 \u2028",
        [TextBlock(text="a block")],
    ],
)
def test_a_message_counts_for_the_length_of_its_contents_json(content: object) -> None:
    msg = Msg(name="u", role="user", content=content)
    assert estimate.message_chars(msg) == len(msg.model_dump_json(include={"content"}))
