"""``Toolkit``: the tools an agent may call, and ``execute``, which turns any model mistake into an
error result instead of an exception.

Also re-exports :class:`Tool`, :class:`ToolEnv`, :func:`tool`, :func:`current_tool_env` and
:func:`use_tool_env`, so everything a tool author needs is importable from here.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..errors import ToolError, public_message
from ..message import ToolResultBlock, ToolUseBlock
from ..model.base import ToolSchema
from .base import (
    ALIASES,
    Tool,
    ToolEnv,
    current_tool_env,
    get_tool_env,
    resolve_tool_name,
    to_output,
    use_tool_env,
)
from .decorator import tool
from .output import ToolOutput

__all__ = [
    "ALIASES",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "Tool",
    "ToolEnv",
    "Toolkit",
    "current_tool_env",
    "get_tool_env",
    "resolve_tool_name",
    "tool",
    "use_tool_env",
]

log = logging.getLogger(__name__)
#: The scope of a tool call given no env (shared: the caller made its env current, or has none).
_NO_ENV = contextlib.nullcontext()

DEFAULT_MAX_OUTPUT_CHARS = 100_000


class Toolkit:
    """An ordered set of uniquely named tools.

    Lookups accept Claude Code aliases (``"Read"`` finds ``read_file``) when no tool has that exact
    name. Derived toolkits (:meth:`subset`, :meth:`merged`, :meth:`without`) share the Tool objects.
    """

    def __init__(
        self,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        if max_output_chars < 1:
            raise ValueError(f"max_output_chars must be positive, got {max_output_chars}")
        self.max_output_chars = max_output_chars
        self._tools: dict[str, Tool] = {}
        self._schemas: list[ToolSchema] | None = None  # built on first use, dropped by register
        for t in tools:
            self.register(t)

    def register(self, tool_or_fn: Tool | Callable[..., Any]) -> Tool:
        """Add a Tool (or a function, converted with :func:`tool`); returns the Tool."""
        t = tool_or_fn if isinstance(tool_or_fn, Tool) else tool(tool_or_fn)
        if t.name in self._tools:
            raise ValueError(
                f"a tool named {t.name!r} is already in this toolkit; give one of them another "
                "name (tool(name=...))"
            )
        self._tools[t.name] = t
        self._schemas = None
        return t

    def get(self, name: str) -> Tool | None:
        """The tool called ``name`` (or the built-in tool it is an alias of), or None."""
        found = self._tools.get(name)
        return found if found is not None else self._tools.get(resolve_tool_name(name))

    def names(self) -> list[str]:
        return list(self._tools)

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def schemas(self) -> list[ToolSchema]:
        """What the model is told about every tool, in registration order.

        Built once per toolkit (again after :meth:`register`) from each tool's cached
        :meth:`Tool.schema`, so a derived toolkit (:meth:`merged`) builds no schema anew.
        """
        if self._schemas is None:
            self._schemas = [t.schema() for t in self._tools.values()]
        return list(self._schemas)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __repr__(self) -> str:
        return f"Toolkit({self.names()!r})"

    def unknown(self, names: Iterable[str]) -> list[str]:
        """The entries of ``names`` this toolkit cannot resolve (to report bad specs)."""
        return [n for n in names if n not in self]

    def subset(self, names: Iterable[str]) -> Toolkit:
        """A toolkit with only the named tools (aliases resolved, in the given order; unknown
        names are ignored: check them with :meth:`unknown`)."""
        picked: dict[str, Tool] = {}
        for n in names:
            t = self.get(n)
            if t is not None:
                picked.setdefault(t.name, t)
        return self._derive(picked.values())

    def merged(self, other: Toolkit | Iterable[Tool]) -> Toolkit:
        """This toolkit's tools followed by ``other``'s; a different tool with a taken name -> ValueError."""
        merged = dict(self._tools)
        for t in other:
            if merged.get(t.name, t) is not t:
                raise ValueError(f"cannot merge toolkits: both have a tool named {t.name!r}")
            merged[t.name] = t
        return self._derive(merged.values())

    def without(self, names: Iterable[str]) -> Toolkit:
        """A toolkit without the named tools (aliases resolved)."""
        drop = {t.name for n in names if (t := self.get(n)) is not None}
        return self._derive(t for name, t in self._tools.items() if name not in drop)

    def _derive(self, tools: Iterable[Tool]) -> Toolkit:
        return Toolkit(tools, max_output_chars=self.max_output_chars)

    async def execute(self, call: ToolUseBlock, *, env: ToolEnv | None = None) -> ToolResultBlock:
        """Run one tool call. Never raises for a model mistake or a failing tool: those become
        ``is_error`` results. Cancellation propagates. ``env``, if given, is made current."""
        t = self.get(call.name)
        if t is None:
            available = ", ".join(self._tools) or "none"
            return self._result(
                call, f"unknown tool {call.name!r}; available tools: {available}", error=True
            )
        try:
            arguments = t.validate(call.input)
        except ToolError as exc:
            return self._result(call, str(exc), error=True)
        scope = use_tool_env(env) if env is not None else _NO_ENV
        try:
            with scope:
                value = await t.func(**arguments)
            data = value.data() if isinstance(value, ToolOutput) else None
            return self._result(call, to_output(value), data=data)
        except ToolError as exc:
            return self._result(call, str(exc), error=True)
        except Exception as exc:
            log.warning("tool %s (call %s) failed", t.name, call.id, exc_info=True)
            return self._result(
                call,
                f"tool {t.name} failed: {type(exc).__name__}: {public_message(exc)}",
                error=True,
            )

    def _result(
        self,
        call: ToolUseBlock,
        output: str,
        *,
        error: bool = False,
        data: dict[str, Any] | None = None,
    ) -> ToolResultBlock:
        if len(output) > self.max_output_chars:
            omitted = len(output) - self.max_output_chars
            output = (
                output[: self.max_output_chars]
                + f"\n\n[output truncated: {omitted} of {len(output)} characters omitted; "
                "ask for less, e.g. a narrower pattern or a smaller range]"
            )
        return ToolResultBlock(
            tool_use_id=call.id, name=call.name, output=output, is_error=error, data=data
        )
