"""Build a chat model from a string: ``"provider:model"``, or the name of a registered model.

A registered model is a name mapped to a builder: a callable, or a ``"package.module:attribute"``
string imported on first use, so this module never imports what it names. ``"offline"`` (the
deterministic code-review model of :mod:`agentscope_teams.review.offline_model`) is registered so.

Claude Code's model aliases are registered too (:data:`CLAUDE_ALIASES`): ``sonnet``, ``opus`` and
``haiku`` build an :class:`~.anthropic.AnthropicChatModel` of the model id in the environment
variable Claude Code reads (``ANTHROPIC_DEFAULT_SONNET_MODEL``, ...) or else the default id below.
``inherit`` is not a model: a spec saying it uses its parent's model (the spec loader maps it to
``None``). ``anthropic:<model>`` and a bare ``claude-...`` id also build Anthropic models.
:func:`import_object` is the one importer of such paths (registered builders, and the command line's
``--model python:package.module:attribute``): every failure is a
:class:`~agentscope_teams.errors.ModelConfigurationError` naming the module and attribute.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from ..errors import AgentScopeTeamsError, MissingDependencyError, ModelConfigurationError
from .base import ChatModel
from .providers import ANTHROPIC, PROVIDERS

ModelBuilder = Callable[..., ChatModel]

#: Claude Code alias -> (environment variable naming the model id, default model id).
CLAUDE_ALIASES: dict[str, tuple[str, str]] = {
    "sonnet": ("ANTHROPIC_DEFAULT_SONNET_MODEL", "claude-sonnet-4-5"),
    "opus": ("ANTHROPIC_DEFAULT_OPUS_MODEL", "claude-opus-4-5"),
    "haiku": ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-haiku-4-5"),
}


def claude_alias_model(alias: str) -> str:
    """The Anthropic model id a Claude Code alias stands for (see :data:`CLAUDE_ALIASES`)."""
    env, default = CLAUDE_ALIASES[alias]
    return os.environ.get(env, "").strip() or default


def _alias_builder(alias: str) -> ModelBuilder:
    def build(**kwargs: Any) -> ChatModel:
        return _anthropic(claude_alias_model(alias), **kwargs)

    return build


def _anthropic(model: str, **kwargs: Any) -> ChatModel:
    from .anthropic import AnthropicChatModel  # the SDK is an extra, imported on first use

    return AnthropicChatModel(model, **kwargs)


_BUILDERS: dict[str, str | ModelBuilder] = {
    "offline": "agentscope_teams.review.offline_model:offline_model",
    **{alias: _alias_builder(alias) for alias in CLAUDE_ALIASES},
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
    ``"openai-compatible:qwen3-max"``, ``"anthropic:claude-sonnet-4-5"`` (or a bare
    ``"claude-..."`` id) or a registered name such as ``"offline"`` or ``"sonnet"``.

    Keys and base URLs come from ``kwargs`` (``api_key=``, ``base_url=``) or the environment
    (``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, ``DASHSCOPE_API_KEY`` / ``DASHSCOPE_BASE_URL``,
    ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``); ``openai-compatible`` has no default base URL.
    Other ``kwargs`` go to :class:`OpenAIChatModel` / ``AnthropicChatModel``, or to the builder of a
    registered model.
    """
    name = s.strip()
    if name in _BUILDERS:
        return _build(name, **kwargs)
    if name.startswith("claude-") and ":" not in name:
        return _anthropic(name, **kwargs)
    prefix, sep, model = name.partition(":")
    if sep and prefix == ANTHROPIC.name:
        if not model.strip():
            raise ModelConfigurationError(f"no model id in {s!r}: write it as 'anthropic:<model>'")
        return _anthropic(model.strip(), **kwargs)
    if not sep or prefix not in PROVIDERS:
        supported = ", ".join(f"'{p}:<model>'" for p in [*PROVIDERS, ANTHROPIC.name])
        names = ", ".join(f"'{n}'" for n in registered_models())
        raise ModelConfigurationError(
            f"unknown model provider in {s!r}: use one of {supported}"
            + (f", or a registered model ({names})" if names else "")
        )
    if not model.strip():
        raise ModelConfigurationError(f"no model id in {s!r}: write it as '{prefix}:<model>'")
    try:  # the SDK is an extra, imported on first use
        from .openai import OpenAIChatModel
    except MissingDependencyError as exc:
        raise MissingDependencyError(f"the model {name!r}", exc.extra, exc.missing) from None
    return OpenAIChatModel(model.strip(), provider=prefix, **kwargs)


def model_name_problem(s: str) -> str | None:
    """Why :func:`model_from_string` would refuse the name ``s`` (None: it reads it), without
    building the model (no key or network needed): ``specs check --strict`` asks this."""
    name = s.strip()
    if name in _BUILDERS or (name.startswith("claude-") and ":" not in name):
        return None
    prefix, sep, model = name.partition(":")
    if sep and prefix in (*PROVIDERS, ANTHROPIC.name) and model.strip():
        return None
    supported = ", ".join(f"'{p}:<model>'" for p in [*PROVIDERS, ANTHROPIC.name])
    return f"unknown model {s!r}: use one of {supported}, a Claude alias or a registered model"


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
        what = f"the builder {builder!r} of model {name!r}"
        found = import_object(builder, what)
        if not callable(found):
            raise ModelConfigurationError(f"{what} is not callable")
        builder = found
    model = construct(builder, f"model {name!r}", kwargs)
    if not isinstance(model, ChatModel):
        raise ModelConfigurationError(
            f"the builder of model {name!r} returned a {type(model).__name__}, not a ChatModel"
        )
    return model


def import_object(path: str, what: str) -> Any:
    """The attribute named by ``"package.module:attribute"``; ``what`` names it in errors.

    Every failure (no such module, the module raising at import, no such attribute) is a
    :class:`ModelConfigurationError` that names the module or attribute.
    """
    module, _, attr = path.partition(":")
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise ModelConfigurationError(
                f"cannot load {what}: there is no module {exc.name!r}; install it or add its "
                "directory to PYTHONPATH"
            ) from exc
        raise ModelConfigurationError(
            f"cannot load {what}: importing module {module!r} failed: {exc}"
        ) from exc
    except Exception as exc:
        raise ModelConfigurationError(
            f"cannot load {what}: importing module {module!r} raised "
            f"{type(exc).__name__}: {exc}; fix the module"
        ) from exc
    try:
        return getattr(loaded, attr)
    except AttributeError:
        raise ModelConfigurationError(
            f"cannot load {what}: module {module!r} has no attribute {attr!r}"
        ) from None


def construct(builder: Callable[..., Any], what: str, kwargs: dict[str, Any]) -> Any:
    """``builder(**kwargs)``; an error outside the library's tree becomes a ModelConfigurationError
    naming ``what`` (the library's own errors pass unchanged)."""
    try:
        return builder(**kwargs)
    except AgentScopeTeamsError:
        raise
    except Exception as exc:
        raise ModelConfigurationError(
            f"building {what} raised {type(exc).__name__}: {exc}"
        ) from exc


def _is_import_path(path: str) -> bool:
    module, sep, attr = path.partition(":")
    parts = module.split(".")
    return bool(sep) and all(p.isidentifier() for p in parts) and attr.isidentifier()
