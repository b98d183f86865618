"""Chat models: the :class:`ChatModel` protocol, ``OpenAIChatModel`` (extra ``openai``),
``AnthropicChatModel`` (extra ``anthropic``), ``ScriptedModel`` (no SDK) and
``model_from_string`` (which also builds models registered by name with ``register_model``, such as
``"offline"``, the review model of :mod:`agentscope_teams.review.offline_model`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    ChatModel,
    ModelRequest,
    ModelResponse,
    ResponseSchema,
    StopReason,
    StreamItem,
    StructuredOutputMode,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
    Usage,
)
from .factory import (
    ModelBuilder,
    model_from_string,
    register_model,
    registered_models,
    resolve_model,
)
from .response_parsing import RAW_ARGUMENTS_KEY
from .scripted import ScriptedModel

if TYPE_CHECKING:
    from .anthropic import AnthropicChatModel
    from .openai import OpenAIChatModel

__all__ = [
    "RAW_ARGUMENTS_KEY",
    "AnthropicChatModel",
    "ChatModel",
    "ModelBuilder",
    "ModelRequest",
    "ModelResponse",
    "OpenAIChatModel",
    "ResponseSchema",
    "ScriptedModel",
    "StopReason",
    "StructuredOutputMode",
    "StreamItem",
    "TextDelta",
    "ToolCallDelta",
    "ToolSchema",
    "Usage",
    "model_from_string",
    "register_model",
    "registered_models",
    "resolve_model",
]


def __getattr__(name: str) -> Any:
    # The openai SDK takes ~0.5 s to import: load it only when an OpenAI model is used.
    if name == "OpenAIChatModel":
        from .openai import OpenAIChatModel

        return OpenAIChatModel
    if name == "AnthropicChatModel":  # the anthropic SDK is an extra: loaded on first use
        from .anthropic import AnthropicChatModel

        return AnthropicChatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
