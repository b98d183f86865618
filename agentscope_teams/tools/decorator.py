"""``@tool``: build a :class:`Tool` from a typed function, its signature and its docstring."""

from __future__ import annotations

import functools
import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any, overload

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ..errors import field_path
from .base import Tool, ToolEnv, current_tool_env, get_tool_env, invalid_arguments

_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments):$")
_SECTION = re.compile(r"^[A-Z][A-Za-z ]*:$")
_GOOGLE_ITEM = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(.*)$")
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:(.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(first paragraph, {parameter: description}) from a Google-style or reST docstring."""
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    for line in lines:
        text = line.strip()
        if not text or _SECTION.match(text) or text.startswith(":"):
            break
        summary.append(text)
    params: dict[str, str] = {}
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        if m := _REST_PARAM.match(text):
            base, parts = _indent(lines[i]), [m.group(2).strip()]
            i += 1
            while i < len(lines) and lines[i].strip() and _indent(lines[i]) > base:
                parts.append(lines[i].strip())
                i += 1
            params[m.group(1)] = " ".join(p for p in parts if p)
        elif _ARGS_HEADER.match(text):
            i = _parse_google_args(lines, i, params)
        else:
            i += 1
    return " ".join(summary), params


def _parse_google_args(lines: list[str], start: int, params: dict[str, str]) -> int:
    base, item_indent, current = _indent(lines[start]), None, None
    i = start + 1
    while i < len(lines):
        line, text = lines[i], lines[i].strip()
        dedented = (item_indent is not None and item_indent > base) or bool(_SECTION.match(text))
        if text and _indent(line) <= base and dedented:
            break
        if text:
            item_indent = _indent(line) if item_indent is None else item_indent
            m = _GOOGLE_ITEM.match(text) if _indent(line) == item_indent else None
            if m:
                current = m.group(1)
                params[current] = m.group(2).strip()
            elif current is not None:
                params[current] = (params[current] + " " + text).strip()
        i += 1
    return i


def _env_kind(annotation: Any) -> str | None:
    """ "required" for ``ToolEnv``, "optional" for ``ToolEnv | None``, else None."""
    if annotation is ToolEnv:
        return "required"
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        if ToolEnv in args and all(a in (ToolEnv, type(None)) for a in args):
            return "optional"
    return None


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def _build_model(
    fn: Callable[..., Any], name: str, docs: dict[str, str]
) -> tuple[type[BaseModel], dict[str, str], dict[str, str]]:
    """The argument model (fields aliased to parameter names), field->parameter, env parameters."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise TypeError(f"tool {name!r}: cannot resolve the type hints of {fn!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    env_params: dict[str, str] = {}
    for i, p in enumerate(inspect.signature(fn).parameters.values()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            raise TypeError(
                f"tool {name!r}: parameter {p.name!r} must be a named keyword parameter"
            )
        annotation = hints.get(p.name, Any)
        kind = _env_kind(annotation)
        if kind is not None:
            env_params[p.name] = kind
            continue
        info = Field(alias=p.name, description=docs.get(p.name))
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[f"p{i}"] = (typing.Annotated[annotation, info], default)
        aliases[f"p{i}"] = p.name
    config = ConfigDict(extra="forbid")
    try:
        model = create_model(f"{name}_arguments", __config__=config, **fields)
        model.model_json_schema(by_alias=True)
    except Exception as exc:
        raise TypeError(
            f"tool {name!r}: cannot build a JSON schema for its parameters: {exc}"
        ) from exc
    return model, aliases, env_params


def _problem(err: Any, accepted: list[str]) -> str:
    where = field_path(err, "arguments")
    if err["type"] == "missing":
        return f"{where}: missing required argument"
    if err["type"] == "extra_forbidden":
        return f"{where}: unexpected argument (accepted: {', '.join(accepted) or 'none'})"
    return f"{where}: {err['msg']} (got {err['input']!r:.80})"


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    concurrency_safe: bool | None = None,
    requires_confirmation: bool = False,
    primary_argument: str | None = None,
    asks_user: bool = False,
    idempotent: bool = False,
) -> Tool:
    """The :class:`Tool` for ``fn`` (see :func:`tool`)."""
    tool_name = name or fn.__name__
    summary, docs = parse_docstring(inspect.getdoc(fn))
    model, aliases, env_params = _build_model(fn, tool_name, docs)
    is_async = inspect.iscoroutinefunction(fn)

    async def call(**kwargs: Any) -> Any:
        env: ToolEnv | None = None
        for param, kind in env_params.items():
            value = kwargs[param] = current_tool_env() if kind == "required" else get_tool_env()
            env = env or value
        if is_async:
            if env is not None:
                env.ensure_workspace()  # one stat once it exists: cheap enough for the loop
            return await fn(**kwargs)
        result = await anyio.to_thread.run_sync(functools.partial(_in_thread, env, fn, kwargs))
        return (await result) if inspect.isawaitable(result) else result

    tool_obj = Tool(
        name=tool_name,
        description=summary if description is None else description,
        parameters=_clean_schema(model.model_json_schema(by_alias=True)),
        func=call,
        read_only=read_only,
        concurrency_safe=read_only if concurrency_safe is None else concurrency_safe,
        requires_confirmation=requires_confirmation,
        primary_argument=primary_argument,
        asks_user=asks_user,
        idempotent=idempotent,
    )

    def validate(arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            parsed = model.model_validate(arguments)
        except ValidationError as exc:
            accepted = list(aliases.values())
            problems = [_problem(e, accepted) for e in exc.errors(include_url=False)]
            raise invalid_arguments(tool_obj, problems) from None
        return {alias: getattr(parsed, field) for field, alias in aliases.items()}

    tool_obj.validator = validate
    return tool_obj


def _in_thread(env: ToolEnv | None, fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Run a sync tool in its worker thread, creating the workspace first if it takes a ToolEnv."""
    if env is not None:
        env.ensure_workspace()
    return fn(**kwargs)


@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    concurrency_safe: bool | None = None,
    requires_confirmation: bool = False,
    primary_argument: str | None = None,
    idempotent: bool = False,
) -> Tool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    concurrency_safe: bool | None = None,
    requires_confirmation: bool = False,
    primary_argument: str | None = None,
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    concurrency_safe: bool | None = None,
    requires_confirmation: bool = False,
    primary_argument: str | None = None,
    idempotent: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (async, or sync: run in a worker thread) into a :class:`Tool`.

    The JSON schema comes from the signature (pydantic types, defaults, ``Annotated[..., Field()]``),
    parameter descriptions from the docstring's ``Args:`` section or ``:param x:`` lines, and the
    description from its first paragraph. A parameter annotated ``ToolEnv`` (or ``ToolEnv | None``)
    receives :func:`current_tool_env` and is hidden from the model. ``concurrency_safe`` defaults to
    ``read_only``; ``idempotent``: see :attr:`Tool.idempotent`.
    """

    def build(f: Callable[..., Any]) -> Tool:
        return make_tool(
            f,
            name=name,
            description=description,
            read_only=read_only,
            concurrency_safe=concurrency_safe,
            requires_confirmation=requires_confirmation,
            primary_argument=primary_argument,
            idempotent=idempotent,
        )

    return build if fn is None else build(fn)
