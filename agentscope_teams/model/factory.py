"""Build a chat model from a ``"provider:model"`` string."""

from __future__ import annotations

from typing import Any

from ..errors import ModelConfigurationError
from .base import ChatModel
from .providers import PROVIDERS


def model_from_string(s: str, **kwargs: Any) -> ChatModel:
    """A model from ``"openai:gpt-4o-mini"``, ``"dashscope:qwen-plus"`` or
    ``"openai-compatible:qwen3-max"``.

    Keys and base URLs come from ``kwargs`` (``api_key=``, ``base_url=``) or the environment
    (``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, ``DASHSCOPE_API_KEY`` / ``DASHSCOPE_BASE_URL``);
    ``openai-compatible`` has no default base URL. Other ``kwargs`` go to :class:`OpenAIChatModel`.
    """
    prefix, sep, model = s.strip().partition(":")
    supported = ", ".join(f"'{p}:<model>'" for p in PROVIDERS)
    if not sep or prefix not in PROVIDERS:
        raise ModelConfigurationError(f"unknown model provider in {s!r}: use one of {supported}")
    if not model.strip():
        raise ModelConfigurationError(f"no model id in {s!r}: write it as '{prefix}:<model>'")
    from .openai import OpenAIChatModel

    return OpenAIChatModel(model.strip(), provider=prefix, **kwargs)


def resolve_model(model: str | ChatModel, **kwargs: Any) -> ChatModel:
    """A :class:`ChatModel` unchanged, or a model string through :func:`model_from_string`."""
    if isinstance(model, str):
        return model_from_string(model, **kwargs)
    if isinstance(model, ChatModel):
        return model
    raise ModelConfigurationError(
        f"expected a model string such as 'openai:gpt-4o-mini' or a ChatModel, "
        f"got {type(model).__name__}"
    )
