"""``ScriptedModel``: a deterministic :class:`ChatModel` for tests and docs.

Give it a list of responses, replayed in order, or a function of the request::

    model = ScriptedModel([
        ScriptedModel.tool_call("read_file", {"path": "a.py"}),
        "The file defines one function.",          # a str is a text response
    ])
    model = ScriptedModel(lambda req: f"you said {req.messages[-1].get_text_content()}")

List items may also be functions of the request (sync or async) or exceptions to raise. Every
request is recorded in :attr:`ScriptedModel.requests` as a snapshot: the message list and each
message are copied (blocks and tool schemas are frozen models and are shared), so later changes to
the conversation do not show in recorded requests.

Sharing: a list script is one queue: concurrent sessions sharing the model consume it in the order
their calls arrive, which depends on scheduling. For concurrent tests give each session its own model
or use the function form, which answers from the request alone.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeAlias

import anyio

from ..errors import ModelError
from ..message import TextBlock, ToolUseBlock, new_id
from .base import (
    FINAL_RESULT_TOOL,
    ModelRequest,
    ModelResponse,
    StreamItem,
    StructuredOutputMode,
    TextDelta,
    ToolCallDelta,
    Usage,
)

ScriptResult: TypeAlias = ModelResponse | str
ScriptFunction: TypeAlias = Callable[[ModelRequest], ScriptResult | Awaitable[ScriptResult]]
ScriptItem: TypeAlias = ModelResponse | str | BaseException | ScriptFunction
_WORDS = re.compile(r"\s*\S+\s*|\s+")


def replay(response: ModelResponse) -> list[StreamItem]:
    """A finished response as a stream would deliver it: word-sized text deltas, one delta per tool
    call, then the response (for models that compute the whole answer at once)."""
    items: list[StreamItem] = [TextDelta(text=w) for w in _WORDS.findall(response.text)]
    items += [
        ToolCallDelta(index=i, id=c.id, name=c.name, arguments=json.dumps(c.input))
        for i, c in enumerate(response.tool_calls)
    ]
    return [*items, response]


def _snapshot(request: ModelRequest) -> ModelRequest:
    """A copy of ``request`` immune to later changes of the conversation, without a deep copy.

    Messages are immutable (:mod:`agentscope_teams.message`), and so are blocks and tool schemas:
    the copy holds new lists and a new metadata dict of the same objects, so it costs one
    reference per message, not a copy of each.
    """
    return request.model_copy(
        update={
            "messages": list(request.messages),
            "tools": list(request.tools),
            "metadata": dict(request.metadata),
        }
    )


class ScriptedModel:
    """Replays scripted responses (or calls a function of the request); see the module docs."""

    def __init__(
        self,
        responses: Sequence[ScriptItem] | ScriptFunction,
        *,
        name: str = "scripted",
        delay: float = 0.0,
        structured_output: StructuredOutputMode = "tool",
    ) -> None:
        if isinstance(responses, str | ModelResponse):
            raise TypeError("ScriptedModel takes a list of responses: wrap the response in [...]")
        self.name = name
        self.delay = delay
        #: How an agent asks this model for structured output: ``tool`` (it must call the
        #: ``final_result`` tool, see :meth:`final_result`) or ``native`` (it answers JSON text; the
        #: schema is in each recorded request's ``response_schema``).
        self.structured_output: StructuredOutputMode = structured_output
        self.requests: list[ModelRequest] = []
        self._function = None if isinstance(responses, Sequence) else responses
        self._script: list[ScriptItem] = list(responses) if isinstance(responses, Sequence) else []
        self._used = 0

    @property
    def model_name(self) -> str:
        return self.name

    @property
    def remaining(self) -> int | None:
        """Scripted responses not yet used; ``None`` for a function script."""
        return None if self._function is not None else len(self._script) - self._used

    def __repr__(self) -> str:
        script = "function" if self._function is not None else f"{self.remaining} left"
        return f"ScriptedModel(name={self.name!r}, {script})"

    async def generate(self, request: ModelRequest) -> ModelResponse:
        item = self._next(request)
        if self.delay > 0:
            await anyio.sleep(self.delay)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ModelResponse | str):
            return self._as_response(item)
        result = item(request)
        if inspect.isawaitable(result):
            result = await result
        return self._as_response(result)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """Word-sized :class:`TextDelta` items, one :class:`ToolCallDelta` per call, then the response."""
        for item in replay(await self.generate(request)):
            yield item

    def _next(self, request: ModelRequest) -> ScriptItem:
        """Record the request and take the next item (no await: arrival order is consumption order)."""
        self.requests.append(_snapshot(request))
        if self._function is not None:
            return self._function
        if self._used >= len(self._script):
            raise ModelError(
                f"ScriptedModel {self.name!r} has no response for call #{len(self.requests)}: "
                f"all {len(self._script)} scripted responses were used; add responses to the script"
            )
        self._used += 1
        return self._script[self._used - 1]

    def _as_response(self, result: object) -> ModelResponse:
        if isinstance(result, str):
            return ScriptedModel.text(result).model_copy(update={"model": self.name})
        if isinstance(result, ModelResponse):
            response = result.model_copy(deep=True)
            response.model = response.model or self.name
            return response
        raise TypeError(
            f"ScriptedModel {self.name!r}: a script function returned {type(result).__name__}; "
            "return a ModelResponse or a str"
        )

    @staticmethod
    def text(text: str, *, usage: Usage | None = None) -> ModelResponse:
        """A plain text answer (``stop_reason="end_turn"``)."""
        content: list[TextBlock | ToolUseBlock] = [TextBlock(text=text)] if text else []
        return ModelResponse(content=content, usage=usage or Usage(), stop_reason="end_turn")

    @staticmethod
    def tool_call(
        name: str,
        input: dict[str, Any] | None = None,
        *,
        id: str | None = None,
        text: str = "",
        usage: Usage | None = None,
    ) -> ModelResponse:
        """One tool call (``stop_reason="tool_use"``), optionally preceded by text."""
        call = ToolUseBlock(id=id or new_id("call_"), name=name, input=input or {})
        return ScriptedModel.tool_calls([call], text=text, usage=usage)

    @staticmethod
    def final_result(data: Any, *, text: str = "", usage: Usage | None = None) -> ModelResponse:
        """The final-answer tool call of structured output (``tool`` mode). ``data`` is the value;
        a value that is not a JSON object is sent as ``{"result": data}``, as the tool's schema
        asks for such types."""
        arguments = data if isinstance(data, dict) else {"result": data}
        return ScriptedModel.tool_call(FINAL_RESULT_TOOL, arguments, text=text, usage=usage)

    @staticmethod
    def tool_calls(
        calls: Iterable[tuple[str, dict[str, Any]] | ToolUseBlock],
        *,
        text: str = "",
        usage: Usage | None = None,
    ) -> ModelResponse:
        """Several tool calls in one response: ``(name, input)`` pairs or :class:`ToolUseBlock`."""
        content: list[TextBlock | ToolUseBlock] = [TextBlock(text=text)] if text else []
        for call in calls:
            if not isinstance(call, ToolUseBlock):
                call = ToolUseBlock(id=new_id("call_"), name=call[0], input=call[1])
            content.append(call)
        return ModelResponse(content=content, usage=usage or Usage(), stop_reason="tool_use")
