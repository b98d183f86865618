"""Quality rules: long functions, deep nesting, bare/swallowing ``except``, mutable defaults, many params."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ._astutil import FUNCTION_TYPES, ModuleContext, str_constant
from .findings import Finding, Severity

MUTABLE_CALLS = {"list", "dict", "set", "bytearray", "defaultdict", "OrderedDict", "deque"}
NESTED_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class QualityLimits:
    """Thresholds: a function may have ``max_statements`` statements, ``max_depth`` nested blocks and
    ``max_params`` parameters (``self``/``cls`` not counted) before it is reported."""

    max_statements: int = 60
    max_depth: int = 4
    max_params: int = 7


def check(ctx: ModuleContext, limits: QualityLimits) -> Iterator[Finding]:
    for node in ctx.nodes:
        if isinstance(node, FUNCTION_TYPES):
            yield from _check_function(ctx, node, limits)
        elif isinstance(node, ast.ExceptHandler):
            yield from _check_handler(ctx, node)


def _q(ctx: ModuleContext, node: ast.AST, rule: str, sev: Severity, msg: str) -> Finding:
    return ctx.finding(node, "quality", rule, sev, msg)


def _check_function(
    ctx: ModuleContext, fn: ast.FunctionDef | ast.AsyncFunctionDef, limits: QualityLimits
) -> Iterator[Finding]:
    count = _count_statements(fn.body)
    if count > limits.max_statements:
        sev = Severity.MEDIUM if count > 2 * limits.max_statements else Severity.LOW
        yield _q(
            ctx, fn, "long-function", sev,
            f"function `{fn.name}` has {count} statements (limit {limits.max_statements}); split it "
            "into smaller functions with one job each so each part can be read and tested alone.",
        )  # fmt: skip
    deep = _first_too_deep(fn.body, 0, limits.max_depth)
    if deep is not None:
        yield _q(
            ctx, deep, "deep-nesting", Severity.MEDIUM,
            f"code in `{fn.name}` is nested more than {limits.max_depth} blocks deep; return early "
            "(guard clauses), `continue` in loops, or move the inner blocks into a helper function.",
        )  # fmt: skip
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    if params and params[0].arg in ("self", "cls"):
        params = params[1:]
    if len(params) > limits.max_params:
        yield _q(
            ctx, fn, "too-many-params", Severity.LOW,
            f"function `{fn.name}` takes {len(params)} parameters (limit {limits.max_params}); group "
            "related ones into a dataclass or split the function.",
        )  # fmt: skip
    defaults = [d for d in [*a.defaults, *a.kw_defaults] if d is not None and _is_mutable(d)]
    if defaults:
        names = ", ".join(_default_owner(fn, d) for d in defaults)
        yield _q(
            ctx, defaults[0], "mutable-default", Severity.MEDIUM,
            f"`{fn.name}` has a mutable default ({names}): it is created once and shared by every "
            "call, so changes leak between calls. Default to None and create it inside the function.",
        )  # fmt: skip


def _count_statements(body: list[ast.stmt]) -> int:
    total = 0
    for i, stmt in enumerate(body):
        if i == 0 and isinstance(stmt, ast.Expr) and str_constant(stmt.value) is not None:
            continue  # docstring
        total += 1
        if not isinstance(stmt, NESTED_DEFS):
            total += sum(_count_statements(block) for block in _blocks(stmt))
    return total


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    blocks: list[list[ast.stmt]] = []
    for field in ("body", "orelse", "finalbody"):
        value = getattr(stmt, field, None)
        if isinstance(value, list) and value:
            blocks.append(value)
    if isinstance(stmt, ast.Try | ast.TryStar):
        blocks += [h.body for h in stmt.handlers]
    if isinstance(stmt, ast.Match):
        blocks += [c.body for c in stmt.cases]
    return blocks


def _first_too_deep(body: list[ast.stmt], depth: int, limit: int) -> ast.stmt | None:
    """The first statement inside more than ``limit`` nested blocks (an ``elif`` is not deeper)."""
    for stmt in body:
        if depth > limit:
            return stmt
        if isinstance(stmt, NESTED_DEFS):
            continue
        for block in _blocks(stmt):
            is_elif = (
                isinstance(stmt, ast.If)
                and block is stmt.orelse
                and len(block) == 1
                and isinstance(block[0], ast.If)
            )
            found = _first_too_deep(block, depth if is_elif else depth + 1, limit)
            if found is not None:
                return found
    return None


def _is_mutable(node: ast.expr) -> bool:
    if isinstance(node, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in MUTABLE_CALLS
    )


def _default_owner(fn: ast.FunctionDef | ast.AsyncFunctionDef, default: ast.expr) -> str:
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    pairs = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True))
    pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
    return next(f"{arg.arg}={ast.unparse(d)}" for arg, d in pairs if d is default)


def _check_handler(ctx: ModuleContext, handler: ast.ExceptHandler) -> Iterator[Finding]:
    if handler.type is None:
        yield _q(
            ctx, handler, "bare-except", Severity.MEDIUM,
            "bare `except:` also catches KeyboardInterrupt and SystemExit and hides real bugs; "
            "catch the specific exceptions you expect (at most `except Exception`) and log them.",
        )  # fmt: skip
        return
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    broad = any(isinstance(t, ast.Name) and t.id in ("Exception", "BaseException") for t in caught)
    if broad and all(_does_nothing(s) for s in handler.body):
        yield _q(
            ctx, handler, "swallowed-exception", Severity.MEDIUM,
            f"`except {ast.unparse(handler.type)}` with an empty body silently swallows every "
            "error; catch only what you expect and log or re-raise the rest.",
        )  # fmt: skip


def _does_nothing(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Pass | ast.Continue):
        return True
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
