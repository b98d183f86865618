"""SQL injection: runtime values put into SQL text with f-strings, ``+``, ``%`` or ``.format``.

Only DML (SELECT ... FROM, INSERT INTO, UPDATE ... SET, DELETE FROM) counts, and only values put where
SQL expects a value (inside quotes, after ``=``/``<``/``LIKE``/``IN (``/``VALUES (``/``LIMIT``):
identifiers such as table names and statements like ``PRAGMA`` or ``SAVEPOINT`` cannot be passed as
parameters, so formatting them is not reported. Numeric casts (``int(x)``), ALL_CAPS constants and
``", ".join("?" ...)`` placeholder lists are safe. Reported where the string is built: at the
``execute()`` call when built inline, else at the assignment (to a name passed to ``execute()`` in the
same scope, or an SQL-looking name like ``query``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import TypeGuard

from ._astutil import ModuleContext, Scope, is_constant_expr, name_words, str_constant
from .findings import Finding, Severity

EXECUTE_METHODS = {"execute", "executemany", "executescript"}
SQL_NAME_WORDS = {"sql", "query", "stmt", "statement"}
SQL_TEXT = re.compile(
    r"\b(?:select\b[\s\S]+?\bfrom|insert\s+into|update\b[\s\S]+?\bset|delete\s+from)\b",
    re.IGNORECASE,
)
VALUE_BEFORE = re.compile(
    r"(?:[=<>]|\b(?:like|limit|offset|between)\b)\s*\(?\s*$|\b(?:in|values)\s*\([^)]*$",
    re.IGNORECASE,
)
PRINTF = re.compile(r"%%|%(?:\([^)]*\))?[-#0 +]*(?:\d+|\*)?(?:\.\d+)?[diouxXeEfFgGcrsa]")
BRACES = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
SAFE_CASTS = {"int", "float", "len", "bool"}
UNSAFE, SAFE = "\x00", "\x01"  # markers for runtime parts in rendered text


def check(ctx: ModuleContext) -> Iterator[Finding]:
    for scope in ctx.scopes:
        yield from _check_scope(ctx, scope)


def _check_scope(ctx: ModuleContext, scope: Scope) -> Iterator[Finding]:
    nodes = ctx.nodes_in(scope)
    bindings = ctx.bindings(scope)
    plain = _Strings(frozenset())
    strings = _Strings(
        frozenset(
            n for n, bs in bindings.items() if all(b.value and plain.safe(b.value) for b in bs)
        )
    )
    executed: set[str] = set()
    for node in nodes:
        if _is_execute(node):
            arg = node.args[0]
            if isinstance(arg, ast.Name):
                executed.add(arg.id)
            elif strings.injectable(arg, need_sql=True):
                yield _finding(ctx, node, "the query passed to execute()")
    sql_names = {
        name
        for name, bs in bindings.items()
        if any(b.value is not None and SQL_TEXT.search(strings.text(b.value)) for b in bs)
    }
    for node in nodes:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                continue
            name = targets[0].id
            used = name in executed or SQL_NAME_WORDS & set(name_words(name))
            if name in sql_names and used and strings.injectable(node.value, need_sql=False):
                yield _finding(ctx, node, f"`{name}`")
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            target = node.target
            tainted = isinstance(target, ast.Name) and target.id in sql_names
            if tainted and strings.injectable(node.value, need_sql=False):
                yield _finding(ctx, node, f"`{ast.unparse(target)}`")


def _is_execute(node: ast.AST) -> TypeGuard[ast.Call]:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in EXECUTE_METHODS
        and bool(node.args)
    )


def _finding(ctx: ModuleContext, node: ast.AST, what: str) -> Finding:
    return ctx.finding(
        node, "security", "sql-injection", Severity.HIGH,
        f"SQL injection: {what} puts runtime values into the SQL text by string formatting, so "
        "input can change the statement. Use placeholders and pass the values separately, e.g. "
        "cursor.execute('... WHERE id = ?', (value,)).",
    )  # fmt: skip


def _in_value_position(before: str) -> bool:
    before = before.replace(UNSAFE, "_").replace(SAFE, "_")
    return before.count("'") % 2 == 1 or VALUE_BEFORE.search(before) is not None


class _Strings:
    """Renders string expressions; ``safe_names`` are local names bound only to safe values."""

    def __init__(self, safe_names: frozenset[str]) -> None:
        self.safe_names = safe_names

    def safe(self, node: ast.expr) -> bool:
        """Values that cannot carry SQL: constants, numeric casts, ``", ".join("?" ...)`` lists."""
        if is_constant_expr(node):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.safe_names
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in SAFE_CASTS:
                return True
            if isinstance(node.func, ast.Attribute) and node.func.attr == "join":
                return any(str_constant(n) in ("?", "%s") for n in ast.walk(node))
        return False

    def injectable(self, node: ast.expr, *, need_sql: bool) -> bool:
        """True if an unsafe runtime part lands in a value position (of DML, if ``need_sql``)."""
        text = self.render(node)
        if text is None or UNSAFE not in text:
            return False
        if need_sql and not SQL_TEXT.search(self.text(node)):
            return False
        return any(_in_value_position(text[: m.start()]) for m in re.finditer(UNSAFE, text))

    def text(self, node: ast.expr) -> str:
        """The rendered text with runtime parts as ``_`` ("" for non-strings)."""
        text = self.render(node) or ""
        return text.replace(UNSAFE, " _ ").replace(SAFE, " _ ")

    def _marker(self, node: ast.expr) -> str:
        return SAFE if self.safe(node) else UNSAFE

    def render(self, node: ast.expr) -> str | None:
        """The string's text with each runtime part as a SAFE/UNSAFE marker; None if not a string."""
        text = str_constant(node)
        if text is not None:
            return text
        if isinstance(node, ast.JoinedStr):
            return "".join(
                self._marker(v.value)
                if isinstance(v, ast.FormattedValue)
                else str_constant(v) or ""
                for v in node.values
            )
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.render(node.left), self.render(node.right)
            if left is None and right is None:
                return None
            lt = self._marker(node.left) if left is None else left
            return lt + (self._marker(node.right) if right is None else right)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            fmt, rhs = str_constant(node.left), node.right
            values = rhs.elts if isinstance(rhs, ast.Tuple) else [rhs]
            if isinstance(rhs, ast.Dict):
                values = [v for v in rhs.values if v is not None]
            return None if fmt is None else _substitute(PRINTF, fmt, self._all_safe(values))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            fmt = str_constant(node.func.value) if node.func.attr == "format" else None
            values = [*node.args, *(k.value for k in node.keywords)]
            return None if fmt is None else _substitute(BRACES, fmt, self._all_safe(values))
        return None

    def _all_safe(self, values: list[ast.expr]) -> bool:
        return all(self.safe(v) for v in values)


def _substitute(pattern: re.Pattern[str], fmt: str, safe: bool) -> str:
    marker = SAFE if safe else UNSAFE

    def repl(m: re.Match[str]) -> str:
        return m.group()[0] if m.group() in ("%%", "{{", "}}") else marker

    return pattern.sub(repl, fmt)
