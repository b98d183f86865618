"""Chat models: the :class:`ChatModel` protocol, ``OpenAIChatModel``, ``ScriptedModel``, ``model_from_string``."""

from __future__ import annotations

from .base import (
    ChatModel,
    ModelRequest,
    ModelResponse,
    StopReason,
    StreamItem,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
    Usage,
)

__all__ = [
    "ChatModel",
    "ModelRequest",
    "ModelResponse",
    "StopReason",
    "StreamItem",
    "TextDelta",
    "ToolCallDelta",
    "ToolSchema",
    "Usage",
]
