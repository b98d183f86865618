"""Shared AST plumbing for this project's own rules: parents, import aliases, scopes, bindings, loops."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from .findings import Category, Finding, Severity

Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
FUNCTION_TYPES = ast.FunctionDef | ast.AsyncFunctionDef
COMPREHENSIONS = ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
Loop = (
    ast.For
    | ast.AsyncFor
    | ast.While
    | ast.ListComp
    | ast.SetComp
    | ast.DictComp
    | ast.GeneratorExp
)


@dataclass(frozen=True)
class Binding:
    """One place a name is bound in a scope; ``value``/``annotation`` are None when unknown."""

    node: ast.AST
    value: ast.expr | None = None
    annotation: ast.expr | None = None


@dataclass
class ModuleContext:
    """A parsed module plus the lookups every rule needs."""

    path: str
    tree: ast.Module
    nodes: list[ast.AST] = field(default_factory=list)
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    _owned: dict[ast.AST, list[ast.AST]] = field(default_factory=dict)
    _bindings: dict[ast.AST, dict[str, list[Binding]]] = field(default_factory=dict)
    _bound_in: dict[ast.AST, set[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, path: str, tree: ast.Module) -> ModuleContext:
        """Index ``tree`` in one breadth-first pass (parents come before their children)."""
        ctx = cls(path, tree)
        owner: dict[ast.AST, ast.AST] = {tree: tree}
        for node in ast.walk(tree):
            ctx.nodes.append(node)
            inner = node if isinstance(node, Scope | ast.ClassDef) else owner[node]
            for child in ast.iter_child_nodes(node):
                ctx.parents[child] = node
                owner[child] = inner
                ctx._owned.setdefault(inner, []).append(child)
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        ctx.aliases[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    ctx.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        return ctx

    def finding(
        self, node: ast.AST | int, category: Category, rule: str, severity: Severity, message: str
    ) -> Finding:
        line = node if isinstance(node, int) else getattr(node, "lineno", 1)
        return Finding(
            file=self.path, line=max(line, 1), severity=severity, category=category,
            rule=rule, message=message,
        )  # fmt: skip

    def qualname(self, node: ast.expr) -> str | None:
        """``a.b.c`` for a name/attribute chain with import aliases resolved, else None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    @property
    def scopes(self) -> list[Scope]:
        """The module and every function in it (lambdas are too small to matter)."""
        return [self.tree, *(n for n in self.nodes if isinstance(n, FUNCTION_TYPES))]

    def nodes_in(self, scope: ast.AST) -> list[ast.AST]:
        """Nodes of ``scope`` itself: not those inside nested functions, lambdas or classes."""
        return self._owned.get(scope, [])

    def names_bound_in(self, loop: ast.AST) -> set[str]:
        if loop not in self._bound_in:
            self._bound_in[loop] = names_bound_in(loop)
        return self._bound_in[loop]

    def scope_of(self, node: ast.AST) -> Scope:
        cur = self.parents.get(node)
        while cur is not None and not isinstance(cur, Scope):
            cur = self.parents.get(cur)
        return cur if cur is not None else self.tree

    def bindings(self, scope: Scope) -> dict[str, list[Binding]]:
        """Every name bound in ``scope`` (not in nested scopes), excluding augmented assignments."""
        if scope not in self._bindings:
            self._bindings[scope] = _collect_bindings(scope, self.nodes_in(scope))
        return self._bindings[scope]

    def loops_around(self, node: ast.AST) -> list[Loop]:
        """Loops that re-run ``node`` on each iteration, innermost first, within its scope.

        A comprehension counts for its element, its ``if`` clauses and the iterables of its inner
        generators; a ``for`` loop for its body (not its iterable); a ``while`` for its test and body.
        """
        loops: list[Loop] = []
        child, cur = node, self.parents.get(node)
        while cur is not None and not isinstance(cur, Scope):
            if isinstance(cur, ast.comprehension):
                owner = self.parents[cur]
                assert isinstance(owner, COMPREHENSIONS)
                if child in cur.ifs or (child is cur.iter and owner.generators[0] is not cur):
                    loops.append(owner)
            elif _repeats(cur, child):
                loops.append(cur)  # type: ignore[arg-type]
            child, cur = cur, self.parents.get(cur)
        return loops


def _repeats(parent: ast.AST, child: ast.AST) -> bool:
    if isinstance(parent, ast.For | ast.AsyncFor):
        return child in parent.body
    if isinstance(parent, ast.While):
        return child is parent.test or child in parent.body
    if isinstance(parent, ast.DictComp):
        return child is parent.key or child is parent.value
    if isinstance(parent, ast.ListComp | ast.SetComp | ast.GeneratorExp):
        return child is parent.elt
    return False


def walk_scope(scope: ast.AST) -> Iterator[ast.AST]:
    """Nodes of ``scope`` without descending into nested functions, lambdas or classes."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, Scope | ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))


def _collect_bindings(scope: ast.AST, nodes: list[ast.AST]) -> dict[str, list[Binding]]:
    out: dict[str, list[Binding]] = {}

    def add(target: ast.AST, b: Binding) -> None:
        if isinstance(target, ast.Name):
            out.setdefault(target.id, []).append(b)
        elif isinstance(target, ast.Tuple | ast.List | ast.Starred):
            for n in ast.walk(target):
                if isinstance(n, ast.Name):
                    out.setdefault(n.id, []).append(Binding(n))

    if isinstance(scope, FUNCTION_TYPES | ast.Lambda):
        a = scope.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None:
                out.setdefault(arg.arg, []).append(Binding(arg, annotation=arg.annotation))
    for node in nodes:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                add(t, Binding(node, value=node.value))
        elif isinstance(node, ast.AnnAssign):
            add(node.target, Binding(node, value=node.value, annotation=node.annotation))
        elif isinstance(node, ast.NamedExpr):
            add(node.target, Binding(node, value=node.value))
        elif isinstance(node, ast.For | ast.AsyncFor):
            add(node.target, Binding(node))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            add(node.optional_vars, Binding(node))
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                out.setdefault(name, []).append(Binding(node))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for al in node.names:
                out.setdefault((al.asname or al.name).split(".")[0], []).append(Binding(node))
        elif isinstance(node, FUNCTION_TYPES | ast.ClassDef | ast.ExceptHandler) and node.name:
            out.setdefault(node.name, []).append(Binding(node))
    return out


def names_bound_in(loop: ast.AST) -> set[str]:
    """Names (re)bound by one iteration of ``loop``: its targets and assignments in its body."""
    names: set[str] = set()
    targets: list[ast.AST] = []
    if isinstance(loop, ast.For | ast.AsyncFor):
        targets.append(loop.target)
    elif isinstance(loop, COMPREHENSIONS):
        targets.extend(g.target for g in loop.generators)
    for node in walk_scope(loop):
        if isinstance(node, ast.Assign):
            targets.extend(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr | ast.For | ast.AsyncFor):
            targets.append(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets.append(node.optional_vars)
    for t in targets:
        names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def str_constant(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def docstring_nodes(nodes: list[ast.AST]) -> set[ast.AST]:
    """The string constants that are module, class or function docstrings."""
    out: set[ast.AST] = set()
    for node in nodes:
        if isinstance(node, ast.Module | ast.ClassDef | FUNCTION_TYPES) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and str_constant(first.value) is not None:
                out.add(first.value)
    return out
