"""Chat models: the :class:`ChatModel` protocol, ``OpenAIChatModel`` (extra ``openai``),
``AnthropicChatModel`` (extra ``anthropic``), ``ScriptedModel`` (no SDK) and
``model_from_string`` (one table of model names and ``scheme:`` prefixes, which
``register_model``, ``register_model_scheme`` and installed packages' entry points extend; see
:mod:`.factory`)."""

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
    register_model_scheme,
    registered_models,
    registered_schemes,
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
    "register_model_scheme",
    "registered_models",
    "registered_schemes",
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
