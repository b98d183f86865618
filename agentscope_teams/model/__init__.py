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
from .factory import model_from_string, resolve_model
from .openai import OpenAIChatModel
from .openai_response import RAW_ARGUMENTS_KEY
from .scripted import ScriptedModel

__all__ = [
    "RAW_ARGUMENTS_KEY",
    "ChatModel",
    "ModelRequest",
    "ModelResponse",
    "OpenAIChatModel",
    "ScriptedModel",
    "StopReason",
    "StreamItem",
    "TextDelta",
    "ToolCallDelta",
    "ToolSchema",
    "Usage",
    "model_from_string",
    "resolve_model",
]
