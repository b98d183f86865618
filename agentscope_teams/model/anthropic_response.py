"""Anthropic Messages API responses (whole or streamed) to :class:`ModelResponse`.

Bodies are validated leniently (unknown fields and block types ignored). A body that is not a
message, or a stream that never starts a message, raises :class:`ModelResponseError`. Tool input
that is not a JSON object (sent whole, or streamed fragments that do not join into one) is kept
under :data:`~.response_parsing.RAW_ARGUMENTS_KEY` for the tool layer to report back to the model.
A stream's usage is that of ``message_start`` updated by the cumulative counts of ``message_delta``.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel

from ..errors import ModelResponseError
from ..message import TextBlock, ToolUseBlock, new_id
from .base import ModelResponse, StopReason, TextDelta, ToolCallDelta, Usage
from .response_parsing import parse_arguments, streamed_content, validate_body

_EXPECTED = "an Anthropic message"  # what an invalid body is said not to be

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "refusal": "content_filter",
}


class _Usage(BaseModel):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None

    def update(self, later: _Usage) -> None:
        """Take the counts ``later`` reports (a ``message_delta``'s are cumulative)."""
        for field, value in later:
            if value is not None:
                setattr(self, field, value)

    def input_total(self) -> int:
        """Input tokens, cached ones included (the API reports them apart)."""
        parts = (self.input_tokens, self.cache_creation_input_tokens, self.cache_read_input_tokens)
        return sum(p or 0 for p in parts)


class _Block(BaseModel):
    type: str
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None


class _Message(BaseModel):
    type: Literal["message"] = "message"
    model: str | None = None
    content: list[_Block] = []
    stop_reason: str | None = None
    usage: _Usage | None = None


class _Delta(BaseModel):
    type: str | None = None
    text: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None


class _Event(BaseModel):
    type: str
    index: int = 0
    message: _Message | None = None
    content_block: _Block | None = None
    delta: _Delta | None = None
    usage: _Usage | None = None


def parse_message(
    data: object, *, model: str, source: str, base_url: str | None = None
) -> ModelResponse:
    """A non-streamed Messages API body (already JSON-decoded) as a :class:`ModelResponse`."""
    message = validate_body(
        _Message, data, expected=_EXPECTED, source=source, model=model, base_url=base_url
    )
    content: list[TextBlock | ToolUseBlock] = []
    for block in message.content:
        if block.type == "text" and block.text:
            content.append(TextBlock(text=block.text))
        elif block.type == "tool_use":
            args = parse_arguments(_input_text(block.input))
            call_id = block.id or new_id("toolu_")
            content.append(ToolUseBlock(id=call_id, name=block.name or "", input=args))
    usage = message.usage or _Usage()
    return ModelResponse(
        content=content,
        usage=Usage(input_tokens=usage.input_total(), output_tokens=usage.output_tokens or 0),
        stop_reason=_STOP_REASONS.get(message.stop_reason or "", "other"),
        model=message.model or model,
    )


class MessageStreamAssembler:
    """Turns streamed events into deltas and, at the end, the final :class:`ModelResponse`.

    Content blocks are numbered by the API; tool-use blocks are renumbered 0, 1, ... so that
    :class:`ToolCallDelta` indexes count tool calls, as for every other model.
    """

    def __init__(self, *, model: str, source: str, base_url: str | None = None) -> None:
        self._model, self._source, self._base_url = model, source, base_url
        self._started = False
        self._text: list[str] = []
        self._calls: dict[int, list[str]] = {}  # block index -> [id, name, json]
        self._streamed: dict[int, bool] = {}  # block index -> input deltas came
        self._stop: str | None = None
        self._usage = _Usage()

    def feed(self, data: object) -> list[TextDelta | ToolCallDelta]:
        """Absorb one event; returns the deltas it carried."""
        event = validate_body(
            _Event,
            data,
            expected=_EXPECTED,
            source=self._source,
            model=self._model,
            base_url=self._base_url,
        )
        if event.type == "message_start" and event.message is not None:
            self._started = True
            self._model = event.message.model or self._model
            self._usage = event.message.usage or _Usage()
        elif event.type == "content_block_start" and event.content_block is not None:
            return self._start_block(event.index, event.content_block)
        elif event.type == "content_block_delta" and event.delta is not None:
            return self._delta(event.index, event.delta)
        elif event.type == "message_delta":
            if event.delta is not None and event.delta.stop_reason:
                self._stop = event.delta.stop_reason
            if event.usage is not None:
                self._usage.update(event.usage)
        return []

    def _start_block(self, index: int, block: _Block) -> list[TextDelta | ToolCallDelta]:
        if block.type == "text" and block.text:
            self._text.append(block.text)
            return [TextDelta(text=block.text)]
        if block.type != "tool_use":
            return []
        call_id, name = block.id or new_id("toolu_"), block.name or ""
        # the API starts with an empty input and streams it; a server that sends it whole here
        # (and no deltas) is honoured too
        seed = "" if block.input == {} else _input_text(block.input)
        self._calls[index] = [call_id, name, seed]
        number = self._call_number(index)
        return [ToolCallDelta(index=number, id=call_id, name=name, arguments=seed)]

    def _delta(self, index: int, delta: _Delta) -> list[TextDelta | ToolCallDelta]:
        if delta.type == "text_delta" and delta.text:
            self._text.append(delta.text)
            return [TextDelta(text=delta.text)]
        if delta.type == "input_json_delta" and index in self._calls and delta.partial_json:
            if self._calls[index][2] and not self._streamed.get(index):
                self._calls[index][2] = ""  # deltas follow: the whole input comes from them
            self._streamed[index] = True
            self._calls[index][2] += delta.partial_json
            return [ToolCallDelta(index=self._call_number(index), arguments=delta.partial_json)]
        return []

    def _call_number(self, index: int) -> int:
        return sorted(self._calls).index(index)

    def finish(self) -> ModelResponse:
        """The assembled response; raises :class:`ModelResponseError` if no message ever started."""
        if not self._started:
            raise ModelResponseError(
                f"the stream never started a message (model {self._model!r}, {self._source})",
                model=self._model,
                base_url=self._base_url,
            )
        slots = (self._calls[index] for index in sorted(self._calls))
        calls = (ToolUseBlock(id=i, name=n, input=parse_arguments(a)) for i, n, a in slots)
        return ModelResponse(
            content=streamed_content(self._text, calls),
            usage=Usage(
                input_tokens=self._usage.input_total(),
                output_tokens=self._usage.output_tokens or 0,
            ),
            stop_reason=_STOP_REASONS.get(self._stop or "", "other"),
            model=self._model,
        )


def _input_text(value: Any) -> str:
    """A tool input as JSON text for :func:`parse_arguments` (a string is taken as sent)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)
