"""Constructor options, typed and checked when the object is built.

A constructor that takes many keyword options declares them as ``TypedDict`` groups (type checkers
check the names and types of a call: ``**options: Unpack[Group]``) and calls :func:`check_options`
first, so an option that is unknown (``max_dpeth=3``) or of the wrong type fails at construction
with an :class:`~agentscope_teams.errors.OptionError` naming it and the closest known option, not
at the first run. :class:`SessionOptions` is the group of :class:`~.harness.SessionAgent`'s own
keyword arguments (``HarnessAgent`` passes them on); :func:`check_keywords` checks the keys of a
mapping passed on to a callable (``team_options``, ``mcp_options``).
"""

from __future__ import annotations

import difflib
import enum
import inspect
import os
import types
import typing
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypedDict

from ..errors import OptionError
from ..sessions import SessionSource
from ..store.base import BaseStore
from ..tools import PermissionEngine, Tool
from ..usage import Budget, RateLimit, UsageGovernor
from .config import ReActConfig
from .extension import Extension

__all__ = ["SessionOptions", "check_keywords", "check_options", "session_options"]


class SessionOptions(TypedDict, total=False):
    """:class:`~.harness.SessionAgent`'s keyword options (see its docstring for each)."""

    workspace: Path | str
    workspace_scope: Literal["session", "shared"]
    store: BaseStore | str | None
    tools: Iterable[Tool]
    builtin_tools: bool
    config: ReActConfig | None
    permissions: PermissionEngine | None
    extensions: Sequence[Extension]
    replicas: int
    remote_workspace: bool
    lease_ttl: float
    busy_timeout: float
    session_source: SessionSource
    depth: int
    tracer_provider: Any
    # budgets and shared rate limits (agentscope_teams.usage; docs/operations.md)
    usage: UsageGovernor | None
    budget: Budget | None
    rate_limit: RateLimit | None


def session_options(options: Mapping[str, Any]) -> SessionOptions:
    """The :class:`SessionOptions` among ``options`` (the others are left out)."""
    keys = SessionOptions.__annotations__
    return typing.cast(SessionOptions, {k: v for k, v in options.items() if k in keys})


@cache
def _hints(group: type) -> dict[str, Any]:
    return typing.get_type_hints(group)


def _unknown(option: str, known: Collection[str], where: str) -> OptionError:
    close = difflib.get_close_matches(option, sorted(known), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else f"; it takes {', '.join(sorted(known))}"
    return OptionError(
        f"{where} has no option {option!r}{hint}",
        option=option,
        suggestion=close[0] if close else None,
    )


def check_options(where: str, options: Mapping[str, Any], group: type) -> None:
    """Raise :class:`OptionError` for the first option of ``options`` that the ``TypedDict``
    ``group`` does not declare (naming the closest declared one), or whose value does not fit
    the declared type. ``where`` names the constructor in the message."""
    hints = _hints(group)
    for option, value in options.items():
        if option not in hints:
            raise _unknown(option, hints, where)
        if not fits(value, hints[option]):
            raise OptionError(
                f"{where}: option {option!r} must be {describe(hints[option])}, got "
                f"{type(value).__name__} {value!r:.80}",
                option=option,
            )


def check_keywords(where: str, options: Mapping[str, Any], target: Callable[..., Any]) -> None:
    """Raise :class:`OptionError` for a key of ``options`` that ``target`` takes no keyword
    argument of (``options`` are passed on to it as ``**options``)."""
    params = inspect.signature(target).parameters.values()
    known = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    for option in options:
        if option not in known:
            raise _unknown(option, known, where)


def fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` fits the type ``hint`` (unions, ``Literal``, classes, enums by value, any
    ``os.PathLike`` for ``Path``, and the items of mappings, lists and tuples; other forms are not
    checked)."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, arm) for arm in typing.get_args(hint))
    if origin is Literal:
        return value in typing.get_args(hint)
    if origin is not None:
        return _fits_generic(value, origin, typing.get_args(hint))
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is Path:
        return isinstance(value, os.PathLike)  # what Path() accepts besides str
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return value in hint.__members__.values() or value in {m.value for m in hint}
    return not isinstance(hint, type) or isinstance(value, hint)


def _fits_generic(value: Any, origin: Any, args: tuple[Any, ...]) -> bool:
    if not isinstance(origin, type) or not isinstance(value, origin):
        return False
    if isinstance(value, str) and origin is not str:
        return False  # a string is a Sequence of strings, never the list meant
    if isinstance(value, Mapping) and len(args) == 2:
        return all(fits(k, args[0]) and fits(v, args[1]) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset) and len(args) == 1:
        return all(fits(item, args[0]) for item in value)
    return True  # an iterator is not consumed to look at its items


def describe(hint: Any) -> str:
    """A type hint as a reader writes it (``int``, ``Path or str or None``)."""
    origin = typing.get_origin(hint)
    if hint is None or hint is type(None):
        return "None"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe(arm) for arm in typing.get_args(hint))
    if origin is Literal:
        return " or ".join(repr(v) for v in typing.get_args(hint))
    if origin is not None:
        inner = ", ".join(describe(a) for a in typing.get_args(hint))
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    return getattr(hint, "__name__", str(hint))
