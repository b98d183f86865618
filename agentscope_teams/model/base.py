"""The model interface: one :class:`ModelRequest` in, one :class:`ModelResponse` out.

A :class:`ChatModel` offers ``generate`` and ``stream``; ``stream`` yields :class:`TextDelta` and
:class:`ToolCallDelta` items as they arrive and ends with exactly one :class:`ModelResponse`, so a
caller that streams and one that does not see the same final response.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..message import Msg, TextBlock, ToolUseBlock

StopReason = Literal["end_turn", "tool_use", "max_tokens", "content_filter", "other"]


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class ToolSchema(BaseModel):
    """What the model is told about a tool: name, description and a JSON schema of its input."""

    model_config = ConfigDict(frozen=True)
    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


StructuredOutputMode = Literal["native", "tool"]
"""How a model returns structured output: ``native`` (the provider constrains the answer to a JSON
schema, :attr:`ModelRequest.response_schema`) or ``tool`` (the model calls a final-answer tool
whose arguments are the schema). A model says which through a ``structured_output`` attribute;
one without it gets ``tool``."""


FINAL_RESULT_TOOL = "final_result"
"""The final-answer tool of ``tool`` mode: its arguments are the output (wrapped as
``{"result": value}`` when the output type is not a JSON object)."""


class ResponseSchema(BaseModel):
    """Native structured output: the answer must be JSON matching ``json_schema`` (an object).

    ``strict`` asks the provider to enforce the schema exactly; it is set only when the schema is
    in the subset strict mode accepts (every object closed and every property required).
    """

    model_config = ConfigDict(frozen=True)
    name: str
    json_schema: dict[str, Any]
    description: str = ""
    strict: bool = False


class ModelRequest(BaseModel):
    """One model call. ``messages`` never contain a system message: ``system_prompt`` carries it.

    ``response_schema`` asks for native structured output; a model without it ignores the field.
    """

    system_prompt: str = ""
    messages: list[Msg]
    tools: list[ToolSchema] = Field(default_factory=list)
    response_schema: ResponseSchema | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    #: Reasoning effort (``low``, ``medium``, ``high``, ``xhigh``, ``max``) for models that have the
    #: setting; an adapter whose model has none ignores it (see :func:`effort_note`).
    effort: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


_EFFORT_NOTED: set[str] = set()


def effort_note(model: str, effort: str) -> None:
    """Log once per model that ``effort`` is ignored because the model has no such setting."""
    if model not in _EFFORT_NOTED:
        _EFFORT_NOTED.add(model)
        logging.getLogger(__name__).info(
            "effort %r is ignored for model %s, which has no reasoning-effort setting",
            effort,
            model,
        )


class ModelResponse(BaseModel):
    """The final result of a model call."""

    content: list[TextBlock | ToolUseBlock] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "end_turn"
    model: str = ""
    #: What the call cost in US dollars, when a price book knows the model (else None): the
    #: budget's under a budget, else the default one (``agent/pricing.py``).
    cost_usd: float | None = None
    #: True when the provider reported no usage and ``usage`` is an estimate.
    usage_estimated: bool = False

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]


class TextDelta(BaseModel):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ToolCallDelta(BaseModel):
    """A fragment of a streamed tool call; ``arguments`` is a piece of its JSON input."""

    type: Literal["tool_call_delta"] = "tool_call_delta"
    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


StreamItem = TextDelta | ToolCallDelta | ModelResponse


@runtime_checkable
class ChatModel(Protocol):
    """A chat model. Implementations are stateless and safe to share between concurrent calls."""

    @property
    def model_name(self) -> str: ...

    async def generate(self, request: ModelRequest) -> ModelResponse: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]: ...
