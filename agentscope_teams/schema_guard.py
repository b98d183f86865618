"""JSON schemas from outside: the one home of which we accept and how data is checked against them.

A task's ``result_schema``, a spec's ``output:`` and an ``OutputType`` built from a schema all come
here (``docs/security.md``, "JSON Schemas we accept"). :func:`accept` refuses, with
:class:`~agentscope_teams.errors.InvalidSchema` naming the place:

* a schema that is not valid draft 2020-12, larger than ``max_schema_chars`` as JSON or nested
  deeper than ``max_schema_depth``;
* a ``$ref`` that is not local (``#/$defs/x``, ``#anchor``): nothing is ever fetched, neither
  ``http(s)://`` nor ``file://``; a ``$ref`` that does not resolve inside the schema or points at
  something that is not a subschema; ``$dynamicRef``; ``$id`` below the top level;
* a ``$ref`` cycle that never descends into the data (``{"$ref": "#"}``, ``allOf`` back to an
  ancestor): checking would never end;
* more than ``max_patterns`` regular expressions, one longer than ``max_pattern_chars``, one the
  ``regex`` engine cannot compile, and ``unevaluatedProperties`` together with
  ``patternProperties`` (jsonschema would run those patterns outside the time bound).

:func:`problems` checks data against an accepted schema within bounds: data larger than
``max_instance_chars`` as JSON or nested deeper than ``max_instance_depth`` is refused unchecked,
every keyword checks a deadline of ``check_seconds``, patterns run on the ``regex`` engine with
that time as its timeout (it releases the GIL, so a slow match in a worker thread does not stall
the event loop), ``uniqueItems`` takes linear time. A bound that is hit is a problem line like any
other (the caller's tool error says what to do), never an exception. :func:`problems_async` runs
the check in a worker thread, off the event loop.
"""

from __future__ import annotations

import copy
import json
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidSchema

__all__ = ["LIMITS", "InvalidSchema", "SchemaLimits", "accept", "problems", "problems_async"]


@dataclass(frozen=True, slots=True)
class SchemaLimits:
    """The bounds of :func:`accept` and :func:`problems` (see the module docs)."""

    #: The schema's size as JSON text (characters).
    max_schema_chars: int = 100_000
    #: How deeply objects and arrays nest in the schema.
    max_schema_depth: int = 32
    #: How many ``pattern`` values and ``patternProperties`` keys the schema holds.
    max_patterns: int = 64
    #: The length of one pattern (characters).
    max_pattern_chars: int = 512
    #: The size of data checked against a schema, as JSON text (characters).
    max_instance_chars: int = 1_000_000
    #: How deeply objects and arrays nest in data checked against a schema.
    max_instance_depth: int = 64
    #: The time one check of data may take (seconds); past it the data is refused unchecked.
    check_seconds: float = 2.0


#: The bounds used when a caller passes none.
LIMITS = SchemaLimits()

#: Keywords whose value is one subschema, a list of them, or a map of names to them.
_ONE = (
    "additionalProperties",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("$defs", "definitions", "dependentSchemas", "patternProperties", "properties")
#: Keywords that apply a subschema to the same data (no step down into it): a cycle of these and
#: ``$ref`` would recurse forever.
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")

_CACHE_MAX = 256
_accepted: dict[tuple[str, SchemaLimits], tuple[dict[str, Any], Any]] = {}
_state = threading.local()


# -- accepting a schema --------------------------------------------------------------------------


def accept(schema: Any, limits: SchemaLimits | None = None) -> dict[str, Any]:
    """A copy of ``schema`` if we accept it (see the module docs), else :class:`InvalidSchema`."""
    return _accept(schema, limits or LIMITS)[0]


def _accept(schema: Any, limits: SchemaLimits) -> tuple[dict[str, Any], Any]:
    """The accepted schema and its bounded validator (cached by the schema's JSON text)."""
    if not isinstance(schema, Mapping):
        raise InvalidSchema(f"a JSON schema must be a mapping, got {type(schema).__name__}")
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidSchema(f"a JSON schema must be JSON data: {exc}") from None
    found = _accepted.get((text, limits))
    if found is not None:
        return copy.deepcopy(found[0]), found[1]
    if len(text) > limits.max_schema_chars:
        raise _refused(
            f"the schema is {len(text)} characters as JSON, over the limit of "
            f"{limits.max_schema_chars}; simplify it"
        )
    data: dict[str, Any] = json.loads(json.dumps(schema))  # a JSON copy, keys in their order
    _check_depth(data, limits.max_schema_depth)
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(data)
    except jsonschema.SchemaError as exc:
        path = tuple(str(p) for p in exc.absolute_path)
        raise InvalidSchema(
            f"not a valid JSON schema at {_where(path)}: {exc.message}", path
        ) from None
    nodes = dict(_subschemas(data, ()))
    _check_keywords(nodes, limits)
    registry = _registry(data)
    targets = _check_refs(nodes, registry.resolver())
    _check_cycles(nodes, targets)
    validator = _validator_class()(data, registry=registry)
    if len(_accepted) >= _CACHE_MAX:
        _accepted.clear()
    _accepted[(text, limits)] = (data, validator)
    return copy.deepcopy(data), validator


def _refused(message: str, path: tuple[str, ...] = ()) -> InvalidSchema:
    return InvalidSchema(f"not accepted: {message}", path)


def _where(path: tuple[str, ...]) -> str:
    return ".".join(path) or "(top level)"


def _check_depth(data: Any, limit: int) -> None:
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > limit:
                raise _refused(f"the schema nests deeper than {limit} levels; flatten it")
            items = value.values() if isinstance(value, dict) else value
            stack.extend((v, depth + 1) for v in items)


def _subschemas(
    schema: Any, path: tuple[str, ...]
) -> Iterator[tuple[int, tuple[tuple[str, ...], dict[str, Any]]]]:
    """(id, (path, node)) of every object subschema, found through the keywords that hold them."""
    if not isinstance(schema, dict):
        return
    yield id(schema), (path, schema)
    for key in _ONE:
        if key in schema:
            yield from _subschemas(schema[key], (*path, key))
    for key in _LIST:
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                yield from _subschemas(sub, (*path, key, str(i)))
    for key in _MAP:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                yield from _subschemas(sub, (*path, key, name))


def _check_keywords(
    nodes: Mapping[int, tuple[tuple[str, ...], dict[str, Any]]], limits: SchemaLimits
) -> None:
    import regex

    patterns: list[tuple[tuple[str, ...], str]] = []
    unevaluated = matched = False
    for path, node in nodes.values():
        if "$dynamicRef" in node:
            raise _refused(
                f"$dynamicRef at {_where(path)} is not supported; use $ref", (*path, "$dynamicRef")
            )
        if "$id" in node and path:
            raise _refused(
                f"$id at {_where(path)} is only allowed at the top level of the schema",
                (*path, "$id"),
            )
        if isinstance(node.get("pattern"), str):
            patterns.append(((*path, "pattern"), node["pattern"]))
        if isinstance(node.get("patternProperties"), dict):
            matched = True
            patterns += [((*path, "patternProperties", p), p) for p in node["patternProperties"]]
        unevaluated = unevaluated or "unevaluatedProperties" in node
    if unevaluated and matched:
        raise _refused(
            "unevaluatedProperties and patternProperties are not accepted in one schema "
            "(jsonschema would match those patterns without a time bound); use "
            "additionalProperties instead of unevaluatedProperties"
        )
    if len(patterns) > limits.max_patterns:
        raise _refused(
            f"the schema has {len(patterns)} patterns (pattern, patternProperties), over the "
            f"limit of {limits.max_patterns}"
        )
    for path, pattern in patterns:
        if len(pattern) > limits.max_pattern_chars:
            raise _refused(
                f"the pattern at {_where(path)} is {len(pattern)} characters long, over the "
                f"limit of {limits.max_pattern_chars}",
                path,
            )
        try:
            regex.compile(pattern)
        except regex.error as exc:
            raise _refused(
                f"the pattern at {_where(path)} is not a regular expression we can run: {exc}",
                path,
            ) from None


def _registry(schema: dict[str, Any]) -> Any:
    """A registry holding ``schema`` alone that retrieves nothing (no network, no files)."""
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012

    return Registry().with_resource("", DRAFT202012.create_resource(schema)).crawl()


def _check_refs(
    nodes: Mapping[int, tuple[tuple[str, ...], dict[str, Any]]], resolver: Any
) -> dict[int, dict[str, Any]]:
    """Every ``$ref`` is local, resolves inside the schema and names a subschema; the target of
    each node's ``$ref`` (by the node's id)."""
    from referencing.exceptions import Unresolvable

    targets: dict[int, dict[str, Any]] = {}
    for key, (path, node) in nodes.items():
        ref = node.get("$ref")
        if ref is None:
            continue
        where = (*path, "$ref")
        if not ref.startswith("#"):
            raise _refused(
                f"$ref {ref!r} at {_where(where)} is not local: only references inside the "
                'schema ("#/$defs/name") are accepted; copy the referenced schema under $defs',
                where,
            )
        try:
            target = resolver.lookup(ref).contents
        except Unresolvable:
            raise _refused(
                f"$ref {ref!r} at {_where(where)} names nothing in the schema", where
            ) from None
        if isinstance(target, bool):
            continue
        if id(target) not in nodes:
            raise _refused(
                f"$ref {ref!r} at {_where(where)} does not point at a subschema "
                "(put what it refers to under $defs)",
                where,
            )
        targets[key] = target
    return targets


def _check_cycles(
    nodes: Mapping[int, tuple[tuple[str, ...], dict[str, Any]]],
    targets: Mapping[int, dict[str, Any]],
) -> None:
    """Refuse a loop of ``$ref`` and in-place keywords (allOf, not, if, ...) that never steps
    down into the data: checking any data against it would recurse forever."""

    def next_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
        for key in _IN_PLACE_ONE:
            if isinstance(node.get(key), dict):
                yield node[key]
        for key in _IN_PLACE_LIST:
            yield from (s for s in node.get(key, ()) if isinstance(s, dict))
        yield from (s for s in node.get("dependentSchemas", {}).values() if isinstance(s, dict))
        if id(node) in targets:
            yield targets[id(node)]

    done: set[int] = set()
    for start in nodes:
        if start in done:
            continue
        on_path: set[int] = {start}
        stack = [(start, next_nodes(nodes[start][1]))]
        while stack:
            key, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(key)
                done.add(key)
                continue
            if id(child) in on_path:
                path = nodes[key][0]
                raise _refused(
                    f"the schema at {_where(path)} leads back to {_where(nodes[id(child)][0])} "
                    "through $ref/allOf/anyOf/oneOf/not/if without descending into the data, "
                    "so checking would never end; recurse only under properties or items",
                    path,
                )
            if id(child) not in done:
                on_path.add(id(child))
                stack.append((id(child), next_nodes(child)))


# -- checking data -------------------------------------------------------------------------------


class _TooSlow(Exception):
    """The check passed its deadline."""


def problems(schema: Any, data: Any, limits: SchemaLimits | None = None) -> list[str]:
    """Every way ``data`` breaks ``schema`` (``"path: message"``, in path order) or the one line
    saying which bound stopped the check. :class:`InvalidSchema` if ``schema`` is not accepted
    (one stored before these rules, say)."""
    limits = limits or LIMITS
    from referencing.exceptions import Unresolvable

    _, validator = _accept(schema, limits)
    refused = _oversized(data, limits)
    if refused:
        return [f"(root): not checked: {refused}"]
    _state.deadline = time.monotonic() + limits.check_seconds
    try:
        errors = list(validator.iter_errors(data))
    except _TooSlow:
        return [
            f"(root): not checked: checking the data against the schema took longer than "
            f"{limits.check_seconds:g} s (a slow pattern or many nested alternatives); send "
            "simpler data, or ask for a simpler schema"
        ]
    except RecursionError:
        return ["(root): not checked: the data and the schema nest too deeply to check"]
    except Unresolvable as exc:  # refs are resolved on acceptance: this is a last defence
        return [f"(root): not checked: a $ref of the schema does not resolve ({exc})"]
    finally:
        _state.deadline = math.inf
    errors.sort(key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in errors]


async def problems_async(schema: Any, data: Any, limits: SchemaLimits | None = None) -> list[str]:
    """:func:`problems` in a worker thread: the event loop keeps running meanwhile."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(problems, schema, data, limits)


def _oversized(data: Any, limits: SchemaLimits) -> str:
    """Why ``data`` is too large to check ("" when it is not)."""
    try:
        size = len(json.dumps(data))
    except (TypeError, ValueError) as exc:
        return f"the data is not JSON ({exc})"
    except RecursionError:
        return f"the data nests deeper than {limits.max_instance_depth} levels; flatten it"
    if size > limits.max_instance_chars:
        return (
            f"the data is {size} characters as JSON, over the limit of "
            f"{limits.max_instance_chars}; send less"
        )
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > limits.max_instance_depth:
                return f"the data nests deeper than {limits.max_instance_depth} levels; flatten it"
            items = value.values() if isinstance(value, dict) else value
            stack.extend((v, depth + 1) for v in items)
    return ""


# -- the bounded validator -----------------------------------------------------------------------

_validator_cls: Any = None


def _validator_class() -> Any:
    """Draft 2020-12 with every keyword behind the deadline, and our ``pattern``,
    ``patternProperties``, ``additionalProperties`` (time-bounded ``regex``) and ``uniqueItems``
    (linear)."""
    global _validator_cls
    if _validator_cls is None:
        from jsonschema import Draft202012Validator, validators

        own = {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
            "uniqueItems": _unique_items,
        }
        keywords = {**Draft202012Validator.VALIDATORS, **own}
        _validator_cls = validators.extend(  # type: ignore[no-untyped-call]
            Draft202012Validator, {k: _timed(f) for k, f in keywords.items()}
        )
    return _validator_cls


def _timed(keyword: Callable[..., Any]) -> Callable[..., Any]:
    def checked(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if time.monotonic() > getattr(_state, "deadline", math.inf):
            raise _TooSlow
        return keyword(validator, value, instance, schema)

    return checked


def _search(pattern: str, text: str) -> bool:
    import regex

    left = getattr(_state, "deadline", math.inf) - time.monotonic()
    if left <= 0:
        raise _TooSlow
    try:
        return regex.search(pattern, text, timeout=None if left == math.inf else left) is not None
    except TimeoutError:
        raise _TooSlow from None


def _error(message: str) -> Any:
    from jsonschema import ValidationError

    return ValidationError(message)


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:77] + "...")


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield _error(f"{_shown(instance)} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, extra_schema: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in known and not any(_search(p, k) for p in patterns)]
    if validator.is_type(extra_schema, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra_schema, path=key)
    elif extra_schema is False and extras:
        shown = ", ".join(_shown(k) for k in sorted(extras)[:10])
        more = f" and {len(extras) - 10} more" if len(extras) > 10 else ""
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            listed = ", ".join(repr(p) for p in sorted(patterns))
            yield _error(f"{shown}{more} {verb} not match any of the regexes: {listed}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield _error(f"Additional properties are not allowed ({shown}{more} {verb} unexpected)")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not (unique and validator.is_type(instance, "array")):
        return
    seen: dict[Any, int] = {}
    for index, item in enumerate(instance):
        key = _canonical(item)
        if key in seen:
            yield _error(f"has non-unique elements (item {index} equals item {seen[key]})")
            return
        seen[key] = index


def _canonical(value: Any) -> Any:
    """A hashable form under which JSON values are equal as JSON Schema says: ``1 == 1.0``,
    ``true != 1``, objects compare without order."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(_canonical(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _canonical(v)) for k, v in value.items()))
    return ("other", repr(value))
