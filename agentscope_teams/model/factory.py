"""Build a chat model from a string: ``"provider:model"``, or the name of a registered model.

A registered model is a name mapped to a builder: a callable, or a ``"package.module:attribute"``
string imported on first use, so this module never imports what it names. ``"offline"`` (the
deterministic code-review model of :mod:`agentscope_teams.review.offline_model`) is registered so.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ..errors import ModelConfigurationError
from .base import ChatModel
from .providers import PROVIDERS

ModelBuilder = Callable[..., ChatModel]

_BUILDERS: dict[str, str | ModelBuilder] = {
    "offline": "agentscope_teams.review.offline_model:offline_model",
}


def register_model(name: str, builder: str | ModelBuilder, *, replace: bool = False) -> None:
    """Make ``model_from_string(name, **kwargs)`` return ``builder(**kwargs)``.

    ``builder`` is a callable or a ``"package.module:attribute"`` string naming one, imported only
    when the name is first used. ``name`` has no ``:`` (that is the provider syntax); registering a
    taken name raises unless ``replace=True``.
    """
    if not name or name != name.strip() or ":" in name:
        raise ModelConfigurationError(
            f"invalid model name {name!r}: use a non-empty name without ':' or surrounding spaces"
        )
    if isinstance(builder, str) and not _is_import_path(builder):
        raise ModelConfigurationError(
            f"invalid builder {builder!r} for model {name!r}: write it as 'package.module:attribute'"
        )
    if name in _BUILDERS and not replace:
        raise ModelConfigurationError(
            f"a model named {name!r} is already registered; pass replace=True to replace it"
        )
    _BUILDERS[name] = builder


def registered_models() -> list[str]:
    """The names :func:`register_model` has registered, sorted."""
    return sorted(_BUILDERS)


def model_from_string(s: str, **kwargs: Any) -> ChatModel:
    """A model from ``"openai:gpt-4o-mini"``, ``"dashscope:qwen-plus"``,
    ``"openai-compatible:qwen3-max"`` or a registered name such as ``"offline"``.

    Keys and base URLs come from ``kwargs`` (``api_key=``, ``base_url=``) or the environment
    (``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, ``DASHSCOPE_API_KEY`` / ``DASHSCOPE_BASE_URL``);
    ``openai-compatible`` has no default base URL. Other ``kwargs`` go to :class:`OpenAIChatModel`,
    or to the builder of a registered model.
    """
    name = s.strip()
    if name in _BUILDERS:
        return _build(name, **kwargs)
    prefix, sep, model = name.partition(":")
    if not sep or prefix not in PROVIDERS:
        supported = ", ".join(f"'{p}:<model>'" for p in PROVIDERS)
        names = ", ".join(f"'{n}'" for n in registered_models())
        raise ModelConfigurationError(
            f"unknown model provider in {s!r}: use one of {supported}"
            + (f", or a registered model ({names})" if names else "")
        )
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


def _build(name: str, **kwargs: Any) -> ChatModel:
    builder = _BUILDERS[name]
    if isinstance(builder, str):
        builder = _import(name, builder)
    model = builder(**kwargs)
    if not isinstance(model, ChatModel):
        raise ModelConfigurationError(
            f"the builder of model {name!r} returned a {type(model).__name__}, not a ChatModel"
        )
    return model


def _import(name: str, path: str) -> ModelBuilder:
    module, _, attr = path.partition(":")
    try:
        found = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ModelConfigurationError(
            f"cannot load the builder {path!r} of model {name!r}: {exc}"
        ) from None
    if not callable(found):
        raise ModelConfigurationError(f"the builder {path!r} of model {name!r} is not callable")
    builder: ModelBuilder = found
    return builder


def _is_import_path(path: str) -> bool:
    module, sep, attr = path.partition(":")
    parts = module.split(".")
    return bool(sep) and all(p.isidentifier() for p in parts) and attr.isidentifier()
