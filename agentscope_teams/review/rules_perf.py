"""Performance rules: list membership in loops, string ``+=`` in loops, nested loops over one sequence.

Each rule reports only what grows with the input: a list literal that is never appended to has a
fixed size, and a string rebuilt inside the same iteration is not accumulated.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ._astutil import Binding, ModuleContext, Scope
from .findings import Finding, Severity

LIST_FUNCS = {"list", "sorted"}
GROW_METHODS = {"append", "extend", "insert"}
SIMPLE_ITER_FUNCS = {"range", "len", "enumerate", "reversed", "sorted", "zip"}
SIMPLE_ITER_METHODS = {"items", "keys", "values"}
ITERATOR_FUNCS = {"iter", "reversed", "enumerate", "zip", "map", "filter", "open"}


def check(ctx: ModuleContext) -> Iterator[Finding]:
    for scope in ctx.scopes:
        nodes = sorted(
            ctx.nodes_in(scope),
            key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)),
        )
        concat_seen: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.Compare):
                yield from _membership(ctx, scope, nodes, node)
            elif isinstance(node, ast.For | ast.AsyncFor):
                yield from _nested_same(ctx, node)
            elif isinstance(node, ast.AugAssign) and _str_concat(ctx, scope, node, concat_seen):
                yield _perf(
                    ctx, node, "str-concat-in-loop",
                    f"`{ast.unparse(node.target)} += ...` inside a loop copies the whole string "
                    "every time: O(n^2) in the length of the result",
                )  # fmt: skip


def _perf(ctx: ModuleContext, node: ast.AST, rule: str, msg: str) -> Finding:
    return ctx.finding(node, "performance", rule, Severity.MEDIUM, msg)


def _membership(
    ctx: ModuleContext, scope: Scope, nodes: list[ast.AST], node: ast.Compare
) -> Iterator[Finding]:
    loops = ctx.loops_around(node)
    if not loops:
        return
    bound_per_iteration = ctx.names_bound_in(loops[0])
    for op, comp in zip(node.ops, node.comparators, strict=True):
        if not isinstance(op, ast.In | ast.NotIn):
            continue
        if isinstance(comp, ast.Name):
            if comp.id in bound_per_iteration or not _is_growing_list(ctx, scope, nodes, comp.id):
                continue
            what = f"the list `{comp.id}`"
        elif _is_call_to(comp, LIST_FUNCS) and not _uses(comp, bound_per_iteration):
            what = f"`{ast.unparse(comp)}`, rebuilt as a list"
        else:
            continue
        yield _perf(
            ctx, node, "list-membership-in-loop",
            f"membership test against {what} inside a loop scans it on every iteration: O(n*m)",
        )  # fmt: skip
        return


def _is_growing_list(ctx: ModuleContext, scope: Scope, nodes: list[ast.AST], name: str) -> bool:
    """True if every binding of ``name`` in ``scope`` is a list whose size depends on the data."""
    bindings = ctx.bindings(scope).get(name, [])
    return bool(bindings) and all(_data_sized(b, nodes, name) for b in bindings)


def _data_sized(b: Binding, nodes: list[ast.AST], name: str) -> bool:
    if b.value is None:  # a parameter (or bare annotation): sized by the caller's data
        return b.annotation is not None and _is_list_annotation(b.annotation)
    if isinstance(b.value, ast.ListComp) or _is_call_to(b.value, LIST_FUNCS):
        return True
    if isinstance(b.value, ast.List):
        return any(_grows(n, name) for n in nodes)
    return False


def _grows(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.AugAssign):
        return isinstance(node.target, ast.Name) and node.target.id == name
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in GROW_METHODS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == name
    )


def _is_list_annotation(node: ast.expr) -> bool:
    base = node.value if isinstance(node, ast.Subscript) else node
    return isinstance(base, ast.Name) and base.id in ("list", "List")


def _is_call_to(node: ast.AST | None, names: set[str]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names


def _uses(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _nested_same(ctx: ModuleContext, node: ast.For | ast.AsyncFor) -> Iterator[Finding]:
    if not _simple_iter(node.iter) or _maybe_iterator(ctx, node):
        return
    dump = ast.dump(node.iter)
    for outer in ctx.loops_around(node):
        if not isinstance(outer, ast.For | ast.AsyncFor) or ast.dump(outer.iter) != dump:
            continue
        if _uses(node.iter, ctx.names_bound_in(outer)) or _exits_after(ctx, node, outer):
            continue
        yield _perf(
            ctx, node, "nested-loop-same-sequence",
            f"loop over `{ast.unparse(node.iter)}` nested inside a loop over the same sequence: "
            "O(n^2) in its length",
        )  # fmt: skip
        return


def _exits_after(ctx: ModuleContext, inner: ast.AST, outer: ast.AST) -> bool:
    """True if the block holding ``inner`` then returns, raises or breaks out of ``outer``."""
    parent = ctx.parents[inner]
    block: list[ast.AST] = []
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(parent, field, None)
        if isinstance(stmts, list) and any(s is inner for s in stmts):
            block = stmts
    after = block[[id(s) for s in block].index(id(inner)) + 1 :] if block else []
    breaks_outer = ctx.loops_around(inner)[:1] == [outer]
    return any(
        isinstance(s, ast.Return | ast.Raise) or (isinstance(s, ast.Break) and breaks_outer)
        for s in after
    )


def _maybe_iterator(ctx: ModuleContext, node: ast.For | ast.AsyncFor) -> bool:
    """A shared iterator (``it = iter(x)``, a file, a generator) is consumed, not re-scanned."""
    bindings = ctx.bindings(ctx.scope_of(node))
    for n in ast.walk(node.iter):
        if not isinstance(n, ast.Name):
            continue
        if n.id == "it" or "iter" in n.id.lower():
            return True
        for b in bindings.get(n.id, []):
            if isinstance(b.node, ast.withitem) or isinstance(b.value, ast.GeneratorExp):
                return True
            if _is_call_to(b.value, ITERATOR_FUNCS):
                return True
    return False


def _simple_iter(node: ast.expr) -> bool:
    """Names, attributes and ``range(len(x))``-like calls: the same text means the same sequence."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            func = n.func
            if not (
                (isinstance(func, ast.Name) and func.id in SIMPLE_ITER_FUNCS)
                or (isinstance(func, ast.Attribute) and func.attr in SIMPLE_ITER_METHODS)
            ):
                return False
        elif not isinstance(
            n, ast.Name | ast.Attribute | ast.Constant | ast.BinOp | ast.operator | ast.expr_context
        ):
            return False
    return True


def _str_concat(ctx: ModuleContext, scope: Scope, node: ast.AugAssign, seen: set[str]) -> bool:
    """First ``s += ...`` in a loop for a str ``s`` initialised outside that loop (once per name)."""
    if not isinstance(node.op, ast.Add) or not isinstance(node.target, ast.Name):
        return False
    name = node.target.id
    loops = ctx.loops_around(node)
    if name in seen or not loops or name in ctx.names_bound_in(loops[0]):
        return False
    bindings = ctx.bindings(scope).get(name, [])
    if bindings and all(_is_str_binding(b) for b in bindings):
        seen.add(name)
        return True
    return False


def _is_str_binding(b: Binding) -> bool:
    if isinstance(b.annotation, ast.Name) and b.annotation.id == "str":
        return True
    return b.value is not None and _is_str_value(b.value)


def _is_str_value(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr) or _is_call_to(node, {"str"}):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "join" and isinstance(node.func.value, ast.Constant)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_str_value(node.left) or _is_str_value(node.right)
    return False
