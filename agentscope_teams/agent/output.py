"""Structured output: :class:`OutputType`, what a reply (or a task result) must return.

An output type is built from a Python type (a pydantic model, a dataclass, ``list[int]``, a
``Literal``: anything pydantic's ``TypeAdapter`` handles) or from a JSON schema (a spec's
``output:``, a task's ``result_schema``). Either way it has a JSON schema, which is what the model
is shown and what is persisted, and it validates values:

* a Python type validates with pydantic and gives the typed value (a model instance, ...);
* a JSON schema validates with ``jsonschema`` and gives the JSON data as it is. The schema is
  accepted and the data checked by :mod:`agentscope_teams.schema_guard` (no remote ``$ref``, bounded
  size, patterns and time); :meth:`OutputType.validate_async` checks off the event loop.

Every problem is one line starting with its field path (``items.0.line: Input should be a valid
integer``), so a model can read and correct it (:class:`~agentscope_teams.errors.OutputValidationError`).

What the model writes is always a JSON object: an output whose schema is not an object (``list[int]``,
a union) is *wrapped* as ``{"result": value}`` (:attr:`OutputType.envelope_schema`), since both the
native ``response_format`` and tool arguments must be objects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from .. import schema_guard
from ..errors import ConfigurationError, OutputValidationError, field_path
from ..errors import InvalidSchema as InvalidSchema  # its home was here
from ..model.base import FINAL_RESULT_TOOL, ResponseSchema, ToolSchema

WRAP_KEY = "result"
MAX_PROBLEMS = 20
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*)\n```\s*$", re.DOTALL)
_cache: dict[Any, OutputType] = {}
_CACHE_MAX = 256


class OutputType:
    """What a value must be: a JSON schema, and the Python type that checks it (if any).

    Build it with :meth:`of` (a type, a JSON schema mapping or an ``OutputType``) or
    :meth:`from_schema`. ``strict`` says whether the schema is in the subset that a provider's
    strict mode enforces exactly (every object closed, every property required).
    """

    def __init__(self, name: str, json_schema: dict[str, Any], python_type: Any = None) -> None:
        self.name = name
        self.json_schema = json_schema
        self.python_type = python_type
        self._adapter: TypeAdapter[Any] | None = (
            TypeAdapter(python_type) if python_type is not None else None
        )
        self.wrapped = json_schema.get("type") != "object"
        self.envelope_schema = _wrap(json_schema) if self.wrapped else json_schema
        self.strict = strict_compatible(self.envelope_schema)

    def __repr__(self) -> str:
        kind = "type" if self.python_type is not None else "JSON schema"
        return f"OutputType({self.name!r}, {kind})"

    @classmethod
    def of(cls, spec: Any) -> OutputType:
        """The output type of ``spec``: an ``OutputType``, a JSON schema (a mapping) or a type."""
        if isinstance(spec, OutputType):
            return spec
        if isinstance(spec, Mapping):
            return cls.from_schema(spec)
        try:
            found = _cache.get(spec)
        except TypeError:  # an unhashable type form: build it every time
            return cls._from_type(spec)
        if found is None:
            found = cls._from_type(spec)
            if len(_cache) >= _CACHE_MAX:
                _cache.clear()
            _cache[spec] = found
        return found

    @classmethod
    def _from_type(cls, python_type: Any) -> OutputType:
        try:
            schema = TypeAdapter(python_type).json_schema()
        except Exception as exc:  # pydantic raises several kinds for a type it cannot handle
            raise ConfigurationError(
                f"output_type {python_type!r} has no JSON schema ({type(exc).__name__}: {exc}); "
                "use a pydantic model or a type pydantic's TypeAdapter handles"
            ) from None
        return cls(_type_name(python_type, schema), schema, python_type)

    @classmethod
    def from_schema(cls, schema: Mapping[str, Any], name: str | None = None) -> OutputType:
        """An output type checked against a JSON schema; an invalid schema raises ``ValueError``
        naming the place in the schema that is wrong."""
        checked = check_json_schema(schema)
        return cls(name or str(checked.get("title") or "output"), checked)

    def same_schema(self, json_schema: Mapping[str, Any]) -> bool:
        return self.json_schema == dict(json_schema)

    # -- validation ------------------------------------------------------------------------------

    def validate(self, data: Any) -> Any:
        """The value for JSON ``data`` (typed for a Python type); raises
        :class:`OutputValidationError` listing every problem with its path."""
        if self._adapter is not None:
            try:
                return self._adapter.validate_python(data)
            except ValidationError as exc:
                raise self._error(list(_pydantic_problems(exc))) from None
        problems = list(schema_problems(self.json_schema, data))
        if problems:
            raise self._error(problems)
        return data

    async def validate_async(self, data: Any) -> Any:
        """:meth:`validate`, a JSON schema's check run in a worker thread (off the event loop)."""
        if self._adapter is not None:
            return self.validate(data)
        problems = await schema_guard.problems_async(self.json_schema, data)
        if problems:
            raise self._error(problems)
        return data

    def validate_arguments(self, arguments: Mapping[str, Any]) -> Any:
        """The value sent as the arguments of the final-answer tool (unwrapped if wrapped)."""
        if not self.wrapped:
            return self.validate(dict(arguments))
        if WRAP_KEY not in arguments:
            raise self._error(
                [f"{WRAP_KEY}: Field required (send the value as {{{WRAP_KEY!r}: ...}})"]
            )
        extra = sorted(set(arguments) - {WRAP_KEY})
        if extra:
            raise self._error(
                [f"{k}: unexpected field; only {WRAP_KEY!r} is allowed" for k in extra]
            )
        return self._prefixed(arguments[WRAP_KEY])

    def validate_text(self, text: str) -> Any:
        """The value of a JSON answer (a fenced ```json block is accepted; a wrapped output may be
        sent wrapped or bare)."""
        body = text.strip()
        fenced = _FENCE.match(body)
        if fenced:
            body = fenced.group(1).strip()
        try:
            data = json.loads(body)
        except ValueError as exc:
            shown = body if len(body) <= 80 else body[:77] + "..."
            raise self._error([f"(answer): not valid JSON ({exc}): {shown!r}"]) from None
        if self.wrapped and isinstance(data, dict) and set(data) == {WRAP_KEY}:
            return self._prefixed(data[WRAP_KEY])
        return self.validate(data)

    def dump(self, value: Any) -> Any:
        """``value`` as JSON data (what is persisted and shown to a parent or lead)."""
        return (
            to_jsonable_python(value)
            if self._adapter is None
            else self._adapter.dump_python(value, mode="json")
        )

    def _prefixed(self, data: Any) -> Any:
        try:
            return self.validate(data)
        except OutputValidationError as exc:
            raise self._error([_under_wrap(p) for p in exc.problems]) from None

    def _error(self, problems: list[str]) -> OutputValidationError:
        if len(problems) > MAX_PROBLEMS:
            problems = [*problems[:MAX_PROBLEMS], f"... and {len(problems) - MAX_PROBLEMS} more"]
        return OutputValidationError(self.name, problems)

    # -- what the model is shown -----------------------------------------------------------------

    def response_schema(self) -> ResponseSchema:
        """The native ``response_format`` request for this output."""
        return ResponseSchema(
            name=self.name,
            json_schema=self.envelope_schema,
            description=f"The final answer, as {self.name}",
            strict=self.strict,
        )

    def tool_schema(self) -> ToolSchema:
        """The final-answer tool of ``tool`` mode: its arguments are the output."""
        shape = f'{{"{WRAP_KEY}": <the value>}}' if self.wrapped else "the arguments"
        return ToolSchema(
            name=FINAL_RESULT_TOOL,
            description=(
                f"Give your final answer as {self.name}: {shape} must match the schema. Call it "
                "once, when your work is done, instead of answering in text."
            ),
            parameters=self.envelope_schema,
        )


def _type_name(python_type: Any, schema: Mapping[str, Any]) -> str:
    """``Verdict`` for a class, ``list[Verdict]`` for a generic form (modules left out)."""
    if isinstance(python_type, type) and not getattr(python_type, "__args__", None):
        return python_type.__name__
    shown = re.sub(r"\b(?:[A-Za-z_]\w*\.)+", "", str(python_type)).replace("typing.", "")
    return shown or str(schema.get("title") or "output")


def _under_wrap(problem: str) -> str:
    """A problem's path as the model wrote it: under ``result``."""
    if problem.startswith("(root)"):
        return WRAP_KEY + problem.removeprefix("(root)")
    return f"{WRAP_KEY}.{problem}"


def _wrap(schema: dict[str, Any]) -> dict[str, Any]:
    """``{"result": schema}`` as a closed object; shared ``$defs`` move to the top."""
    inner = dict(schema)
    defs = inner.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {WRAP_KEY: inner},
        "required": [WRAP_KEY],
        "additionalProperties": False,
    }
    if defs is not None:
        wrapped["$defs"] = defs
    return wrapped


def _nodes(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from _nodes(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _nodes(item)


def strict_compatible(schema: Mapping[str, Any]) -> bool:
    """Whether strict mode can enforce ``schema`` as it is: every object node lists
    ``additionalProperties: false`` and requires all of its properties (as a pydantic model with
    ``extra="forbid"`` and no defaults gives). Others are sent non-strict and checked here."""
    for node in _nodes(dict(schema)):
        if node.get("type") == "object" or "properties" in node:
            props = node.get("properties", {})
            if not isinstance(props, dict) or node.get("additionalProperties") is not False:
                return False
            if set(node.get("required", [])) != set(props):
                return False
    return True


def check_json_schema(schema: Any) -> dict[str, Any]:
    """A copy of ``schema`` if it is a JSON schema we accept (valid draft 2020-12 within the rules
    of :mod:`agentscope_teams.schema_guard`), else :class:`InvalidSchema` (a ``ValueError``)
    naming the path of the problem inside the schema."""
    return schema_guard.accept(schema)


def schema_problems(schema: Mapping[str, Any], data: Any) -> Iterator[str]:
    """Every way ``data`` breaks the JSON ``schema``: ``"path: message"``, in path order (or the
    bound of :mod:`~agentscope_teams.schema_guard` that stopped the check)."""
    yield from schema_guard.problems(schema, data)


def _pydantic_problems(exc: ValidationError) -> Iterator[str]:
    for error in exc.errors(include_url=False):
        path = field_path(error, "(root)")
        shown = ""
        if error["type"] != "missing":
            shown = f" (got {json.dumps(to_jsonable_python(error['input'], fallback=str))[:80]})"
        yield f"{path}: {error['msg']}{shown}"
