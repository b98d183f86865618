"""Build a chat model from a string: one table of model schemes, filled without naming higher layers.

A model string is either a **name** (``"sonnet"``, ``"offline"``) or **``scheme:rest``**
(``"openai:gpt-4o-mini"``, ``"scripted:turns.yaml"``, ``"python:pkg.mod:attr"``). Each name and
scheme maps to a builder in one table (:func:`registered_models`, :func:`registered_schemes`): a
callable, or a ``"package.module:attribute"`` string imported on first use, so this module never
imports what it names. Three sources fill the table:

- this module: the providers (``openai``, ``dashscope``, ``openai-compatible``, ``anthropic``), Claude
  Code's aliases (:data:`CLAUDE_ALIASES`), ``python:`` and ``scripted:``;
- code, through :func:`register_model` and :func:`register_model_scheme`;
- installed packages, through the entry-point groups :data:`MODELS_GROUP` (names) and
  :data:`SCHEMES_GROUP` (schemes), read on first use. ``"offline"`` (the code-review model of
  ``agentscope_teams.review``) is declared so in this package's own metadata, which is how a
  lower layer builds it without naming it.

Claude Code's aliases ``sonnet``, ``opus``, ``haiku`` and ``fable`` build an
:class:`~.anthropic.AnthropicChatModel` of the model id in the environment variable Claude Code
reads (``ANTHROPIC_DEFAULT_SONNET_MODEL``, ...) or else the default id below. ``inherit`` is not a
model: a spec saying it uses its parent's model (the spec loader maps it to ``None``). A bare
``claude-...`` id also builds an Anthropic model.

Schemes that run code or read files the operator chose (``python:``, ``scripted:``) are
*operator-only*: :func:`model_from_string` (your code, ``--model``) builds them, but a spec file's
``model:`` cannot name them (:func:`model_from_spec`, :func:`model_name_problem`).
:func:`import_object` is the one importer of ``package.module:attribute`` paths: every failure is a
:class:`~agentscope_teams.errors.ModelConfigurationError` naming the module and attribute.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from ..errors import AgentScopeTeamsError, MissingDependencyError, ModelConfigurationError
from .base import ChatModel
from .providers import ANTHROPIC, PROVIDERS

ModelBuilder = Callable[..., ChatModel]
#: Entry-point group of named models (``name = "package.module:builder"``; ``builder(**kwargs)``).
MODELS_GROUP = "agentscope_teams.models"
#: Entry-point group of schemes (``scheme = "package.module:builder"``; ``builder(rest, **kwargs)``).
SCHEMES_GROUP = "agentscope_teams.model_schemes"

#: Claude Code alias -> (environment variable naming the model id, default model id).
CLAUDE_ALIASES: dict[str, tuple[str, str]] = {
    "sonnet": ("ANTHROPIC_DEFAULT_SONNET_MODEL", "claude-sonnet-4-5"),
    "opus": ("ANTHROPIC_DEFAULT_OPUS_MODEL", "claude-opus-4-5"),
    "haiku": ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-haiku-4-5"),
    "fable": ("ANTHROPIC_DEFAULT_FABLE_MODEL", "claude-fable-5-2"),
}


@dataclass(frozen=True)
class Scheme:
    """One row of the table: a builder, whether it takes the text after ``scheme:``, and whether
    only the operator may name it (not a spec file)."""

    builder: str | ModelBuilder
    prefixed: bool
    operator_only: bool = False
    #: How to write it, for messages (``'openai:<model>'``).
    usage: str = ""


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


def _openai_builder(provider: str) -> ModelBuilder:
    def build(model: str, **kwargs: Any) -> ChatModel:
        try:  # the SDK is an extra (``openai``), slow to import: on first use
            from .openai import OpenAIChatModel
        except MissingDependencyError as exc:
            raise MissingDependencyError(
                f"the model '{provider}:{model}'", exc.extra, exc.missing
            ) from None
        return OpenAIChatModel(model, provider=provider, **kwargs)

    return build


def _python(path: str, **kwargs: Any) -> ChatModel:
    """``python:package.module:attribute``: a ChatModel, or a function returning one (called with
    ``kwargs``)."""
    what = f"model 'python:{path}'"
    if not _is_import_path(path):
        raise ModelConfigurationError(
            f"write a Python model as 'python:package.module:attribute', not 'python:{path}'"
        )
    found: Any = import_object(path, what)
    if callable(found) and not isinstance(found, ChatModel):
        found = construct(found, what, kwargs)
    if not isinstance(found, ChatModel):
        raise ModelConfigurationError(
            f"{path} is a {type(found).__name__}, not a ChatModel or a function returning one"
        )
    return found


_SCHEMES: dict[str, Scheme] = {
    **{
        name: Scheme(_openai_builder(name), prefixed=True, usage=f"'{name}:<model>'")
        for name in PROVIDERS
    },
    ANTHROPIC.name: Scheme(_anthropic, prefixed=True, usage="'anthropic:<model>'"),
    "python": Scheme(
        _python, prefixed=True, operator_only=True, usage="'python:package.module:attribute'"
    ),
    "scripted": Scheme(
        "agentscope_teams.model.script_file:build",
        prefixed=True,
        operator_only=True,
        usage="'scripted:FILE'",
    ),
    **{alias: Scheme(_alias_builder(alias), prefixed=False) for alias in CLAUDE_ALIASES},
}


@cache
def _installed() -> dict[str, Scheme]:
    """Names and schemes declared by installed packages' entry points (read once)."""
    found: dict[str, Scheme] = {}
    for group, prefixed in ((SCHEMES_GROUP, True), (MODELS_GROUP, False)):
        for ep in entry_points(group=group):
            usage = f"'{ep.name}:...'" if prefixed else ""
            found.setdefault(ep.name, Scheme(ep.value, prefixed=prefixed, usage=usage))
    return found


def _lookup(name: str) -> Scheme | None:
    """The row of ``name``: registered in code first, else declared by an installed package."""
    return _SCHEMES.get(name) or _installed().get(name)


def _register(name: str, row: Scheme, replace: bool) -> None:
    if not name or name != name.strip() or ":" in name:
        raise ModelConfigurationError(
            f"invalid model name {name!r}: use a non-empty name without ':' or surrounding spaces"
        )
    if isinstance(row.builder, str) and not _is_import_path(row.builder):
        raise ModelConfigurationError(
            f"invalid builder {row.builder!r} for model {name!r}: write it as "
            "'package.module:attribute'"
        )
    if _lookup(name) is not None and not replace:
        raise ModelConfigurationError(
            f"a model named {name!r} is already registered; pass replace=True to replace it"
        )
    _SCHEMES[name] = row


def register_model(name: str, builder: str | ModelBuilder, *, replace: bool = False) -> None:
    """Make ``model_from_string(name, **kwargs)`` return ``builder(**kwargs)``.

    ``builder`` is a callable or a ``"package.module:attribute"`` string naming one, imported only
    when the name is first used. ``name`` has no ``:`` (that is the scheme syntax); registering a
    taken name raises unless ``replace=True``. A package can declare one without code, as an entry
    point of the group :data:`MODELS_GROUP`.
    """
    _register(name, Scheme(builder, prefixed=False), replace)


def register_model_scheme(
    scheme: str, builder: str | ModelBuilder, *, operator_only: bool = False, replace: bool = False
) -> None:
    """Make ``model_from_string(f"{scheme}:{rest}", **kwargs)`` return ``builder(rest, **kwargs)``.

    ``operator_only``: a spec file's ``model:`` may not name it (for schemes that import code or
    read files). A package can declare one as an entry point of the group :data:`SCHEMES_GROUP`.
    """
    usage = f"'{scheme}:...'"
    _register(scheme, Scheme(builder, True, operator_only, usage), replace)


def registered_models() -> list[str]:
    """The names a model string may be on its own (``"sonnet"``, ``"offline"``), sorted."""
    return sorted(n for n, row in {**_installed(), **_SCHEMES}.items() if not row.prefixed)


def registered_schemes() -> list[str]:
    """The schemes of ``scheme:rest`` model strings (``"openai"``, ``"scripted"``), sorted."""
    return sorted(n for n, row in {**_installed(), **_SCHEMES}.items() if row.prefixed)


def model_from_string(s: str, **kwargs: Any) -> ChatModel:
    """A model from ``"openai:gpt-4o-mini"``, ``"dashscope:qwen-plus"``,
    ``"openai-compatible:qwen3-max"``, ``"anthropic:claude-sonnet-4-5"`` (or a bare
    ``"claude-..."`` id), ``"scripted:FILE"`` (:mod:`.script_file`), ``"python:pkg.mod:attr"`` (a
    ChatModel or a function returning one) or a registered name such as ``"offline"`` or
    ``"sonnet"``.

    Keys and base URLs come from ``kwargs`` (``api_key=``, ``base_url=``) or the environment
    (``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, ``DASHSCOPE_API_KEY`` / ``DASHSCOPE_BASE_URL``,
    ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``); ``openai-compatible`` has no default base URL.
    Other ``kwargs`` go to :class:`OpenAIChatModel` / ``AnthropicChatModel``, or to the builder.
    """
    name = s.strip()
    named, prefixed, rest = _parse(s)
    if named is not None:
        return _build(name, named, None, kwargs)
    if prefixed is not None:
        return _build(name, prefixed, rest, kwargs)
    if name.startswith("claude-") and ":" not in name:
        return _anthropic(name, **kwargs)
    raise ModelConfigurationError(_unknown(s))


def model_from_spec(s: str) -> ChatModel:
    """The model a spec file's ``model:`` names: as :func:`model_from_string`, except the
    operator-only schemes (``python:``, ``scripted:``), which a spec may not name."""
    problem = _operator_only_problem(s)
    if problem:
        raise ModelConfigurationError(problem)
    return model_from_string(s)


def model_name_problem(s: str) -> str | None:
    """Why a spec file may not name the model ``s`` (None: it may), without building the model
    (no key or network needed): ``specs check --strict`` asks this."""
    named, prefixed, _ = _parse(s)
    name = s.strip()
    if named is not None or prefixed is not None:
        return _operator_only_problem(s)
    if name.startswith("claude-") and ":" not in name:
        return None
    schemes = ", ".join(_usage(n) for n in registered_schemes())
    return f"unknown model {s!r}: use one of {schemes}, a Claude alias or a registered model"


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


def _parse(s: str) -> tuple[Scheme | None, Scheme | None, str]:
    """(the row of a whole name, the row of a ``scheme:`` prefix, the rest after it)."""
    name = s.strip()
    row = _lookup(name)
    if row is not None and not row.prefixed:
        return row, None, ""
    prefix, sep, rest = name.partition(":")
    row = _lookup(prefix) if sep else None
    if row is not None and row.prefixed:
        return None, row, rest.strip()
    return None, None, ""


def _operator_only_problem(s: str) -> str | None:
    _, prefixed, _ = _parse(s)
    if prefixed is None or not prefixed.operator_only:
        return None
    return (
        f"model {s.strip()!r} cannot come from a spec file ({prefixed.usage} imports code or "
        "reads a file the operator chooses): pass it with --model or HarnessAgent(model=...)"
    )


def _usage(scheme: str) -> str:
    row = _lookup(scheme)
    return row.usage if row is not None else f"'{scheme}:...'"


def _unknown(s: str) -> str:
    schemes = ", ".join(_usage(n) for n in registered_schemes())
    names = ", ".join(f"'{n}'" for n in registered_models())
    return f"unknown model provider in {s!r}: use one of {schemes}" + (
        f", or a registered model ({names})" if names else ""
    )


def _build(name: str, row: Scheme, rest: str | None, kwargs: dict[str, Any]) -> ChatModel:
    builder = row.builder
    what = f"model {name!r}"
    if rest is not None and not rest:
        raise ModelConfigurationError(f"no model id in {name!r}: write it as {row.usage}")
    if isinstance(builder, str):
        found = import_object(builder, f"the builder {builder!r} of {what}")
        if not callable(found):
            raise ModelConfigurationError(f"the builder {builder!r} of {what} is not callable")
        builder = found
    args = () if rest is None else (rest,)
    model = construct(lambda **kw: builder(*args, **kw), what, kwargs)
    if not isinstance(model, ChatModel):
        raise ModelConfigurationError(
            f"the builder of {what} returned a {type(model).__name__}, not a ChatModel"
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
