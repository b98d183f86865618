"""Chat-completions responses (whole or streamed) to :class:`ModelResponse`.

Bodies are validated leniently (unknown fields ignored, most fields optional) so that
OpenAI-compatible servers with small deviations still work; a body that is not a completion at all,
or has no choices, raises :class:`ModelResponseError`. Tool arguments that are not a JSON object are
kept under :data:`~.response_parsing.RAW_ARGUMENTS_KEY` for the tool layer to report back to the
model.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from ..errors import ModelResponseError
from ..message import TextBlock, ToolUseBlock, new_id
from .base import ModelResponse, StopReason, TextDelta, ToolCallDelta, Usage
from .response_parsing import parse_arguments, streamed_content, validate_body

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filter",
}


class _Function(BaseModel):
    name: str | None = None
    arguments: Any = None


class _ToolCall(BaseModel):
    index: int | None = None
    id: str | None = None
    function: _Function | None = None


class _Message(BaseModel):
    content: Any = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(BaseModel):
    message: _Message | None = None
    delta: _Message | None = None
    finish_reason: str | None = None


class _Usage(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def convert(self) -> Usage:
        return Usage(
            input_tokens=self.prompt_tokens or 0, output_tokens=self.completion_tokens or 0
        )


class _Body(BaseModel):
    model: str | None = None
    choices: list[_Choice] | None = None
    usage: _Usage | None = None


def parse_completion(
    data: object, *, model: str, source: str, base_url: str | None = None
) -> ModelResponse:
    """A non-streamed completion body (already JSON-decoded) as a :class:`ModelResponse`.

    Errors name ``source`` in their message and carry ``model`` and ``base_url`` as fields."""
    body = _validate(data, source, model, base_url)
    if not body.choices:
        raise ModelResponseError(
            f"response has no choices (model {model!r}, {source})", model=model, base_url=base_url
        )
    choice = body.choices[0]
    message = choice.message or _Message()
    content: list[TextBlock | ToolUseBlock] = []
    text = _content_text(message.content)
    if text:
        content.append(TextBlock(text=text))
    for call in message.tool_calls or []:
        fn = call.function or _Function()
        content.append(_tool_use(call.id, fn.name, _arguments_text(fn.arguments)))
    return ModelResponse(
        content=content,
        usage=body.usage.convert() if body.usage else Usage(),
        stop_reason=stop_reason(choice.finish_reason, has_tool_calls=bool(message.tool_calls)),
        model=body.model or model,
    )


def stop_reason(finish_reason: str | None, *, has_tool_calls: bool) -> StopReason:
    """Map ``finish_reason``; a ``stop`` (or none) that carries tool calls counts as ``tool_use``."""
    if has_tool_calls and finish_reason in (None, "stop"):
        return "tool_use"
    return _STOP_REASONS.get(finish_reason or "", "other")


class StreamAssembler:
    """Turns streamed chunk bodies into deltas and, at the end, the final :class:`ModelResponse`."""

    def __init__(self, *, model: str, source: str, base_url: str | None = None) -> None:
        self._model, self._source, self._base_url = model, source, base_url
        self._text: list[str] = []
        self._calls: dict[int, list[str | None]] = {}  # index -> [id, name, arguments]
        self._finish: str | None = None
        self._usage = Usage()
        self._saw_choice = False

    def feed(self, data: object) -> list[TextDelta | ToolCallDelta]:
        """Absorb one chunk; returns the deltas it carried."""
        chunk = _validate(data, self._source, self._model, self._base_url)
        self._model = chunk.model or self._model
        if chunk.usage is not None:
            self._usage = chunk.usage.convert()
        deltas: list[TextDelta | ToolCallDelta] = []
        for choice in (chunk.choices or [])[:1]:
            self._saw_choice = True
            self._finish = choice.finish_reason or self._finish
            delta = choice.delta or choice.message or _Message()
            text = _content_text(delta.content)
            if text:
                self._text.append(text)
                deltas.append(TextDelta(text=text))
            deltas.extend(self._feed_call(call) for call in delta.tool_calls or [])
        return deltas

    def _feed_call(self, call: _ToolCall) -> ToolCallDelta:
        index = self._index_of(call)
        fn = call.function or _Function()
        args = _arguments_text(fn.arguments)
        slot = self._calls.setdefault(index, [None, None, ""])
        slot[0] = slot[0] or call.id
        slot[1] = slot[1] or fn.name
        slot[2] = (slot[2] or "") + args
        return ToolCallDelta(index=index, id=call.id, name=fn.name, arguments=args)

    def _index_of(self, call: _ToolCall) -> int:
        if call.index is not None:
            return call.index
        for index, slot in self._calls.items():
            if call.id is not None and slot[0] == call.id:
                return index
        if call.id is None and self._calls:
            return max(self._calls)
        return max(self._calls, default=-1) + 1

    def finish(self) -> ModelResponse:
        """The assembled response; raises :class:`ModelResponseError` if no choice ever came."""
        if not self._saw_choice:
            raise ModelResponseError(
                f"response has no choices (model {self._model!r}, {self._source})",
                model=self._model,
                base_url=self._base_url,
            )
        calls = (_tool_use(*self._calls[index]) for index in sorted(self._calls))
        return ModelResponse(
            content=streamed_content(self._text, calls),
            usage=self._usage,
            stop_reason=stop_reason(self._finish, has_tool_calls=bool(self._calls)),
            model=self._model,
        )


def _validate(data: object, source: str, model: str, base_url: str | None) -> _Body:
    return validate_body(
        _Body, data, expected="a chat completion", source=source, model=model, base_url=base_url
    )


def _tool_use(call_id: str | None, name: str | None, args: str | None) -> ToolUseBlock:
    return ToolUseBlock(
        id=call_id or new_id("call_"), name=name or "", input=parse_arguments(args or "")
    )


def _arguments_text(arguments: Any) -> str:
    if arguments is None:
        return ""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""
