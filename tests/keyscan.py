"""A static check (best effort) that only the key registry builds or takes apart store keys.

It flags, in every module of the package except the registry (``keys/``), the store backends
(``store/``) and ``context.py`` (which defines the typed segments):

* a tuple whose first element is a family literal (``("teams", ...)``), directly or through a
  module-level name (``RUNS = "subagents"`` ... ``(RUNS, ...)``) or a concatenation (``kind + "-ack"``);
* a hyphenated family literal passed to a call (``Inbox.of(store, "subagent-mail", ...)``);
* a typed segment made by hand (``"a:" + agent``, ``f"s:{sid}"``) or stripped (``.removeprefix("s:")``);
* a subscript or ``len()`` of a key (``key[-1]``, ``k[3]``, ``lease.key[1:]``, ``len(k) == 5``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from agentscope_teams.keys import FAMILIES

PACKAGE = Path(__file__).resolve().parent.parent / "agentscope_teams"
SKIPPED = ("keys/", "store/", "context.py")
LITERALS = {f.literal for f in FAMILIES}
HYPHENATED = {lit for lit in LITERALS if "-" in lit}
TYPED = ("o:", "u:", "a:", "s:")
KEY_NAMES = {"key", "k"}

Finding = tuple[str, int, str]


def _module_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound to a family literal (also through tuple unpacking)."""
    out: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs: list[tuple[ast.expr, ast.expr]] = [(target, node.value)]
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                pairs = list(zip(target.elts, node.value.elts, strict=False))
            for name, value in pairs:
                if (
                    isinstance(name, ast.Name)
                    and isinstance(value, ast.Constant)
                    and value.value in LITERALS
                ):
                    out[name.id] = str(value.value)
    return out


def _is_key(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id in KEY_NAMES) or (
        isinstance(node, ast.Attribute) and node.attr == "key"
    )


def _str_const(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _tuple_head(node: ast.Tuple, constants: dict[str, str]) -> str | None:
    if not node.elts:
        return None
    head = node.elts[0]
    if _str_const(head) in LITERALS:
        return f"tuple starting with the family literal {_str_const(head)!r}"
    if isinstance(head, ast.Name) and head.id in constants:
        return f"tuple starting with {head.id} (= {constants[head.id]!r})"
    if isinstance(head, ast.BinOp):
        left, right = _str_const(head.left) or "\0", _str_const(head.right) or "\0"
        if any(lit.startswith(left) or lit.endswith(right) for lit in LITERALS):
            return "tuple starting with a family literal made by concatenation"
    return None


def _typed_segment(node: ast.AST) -> str | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        prefix = _str_const(node.left)
        return f"typed segment built by hand ({prefix!r} + ...)" if prefix in TYPED else None
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and str(first.value).startswith(TYPED):
            return "typed segment built by an f-string"
    return None


def _call(node: ast.Call) -> str | None:
    func = node.func
    strip = isinstance(func, ast.Attribute) and func.attr == "removeprefix"
    if strip and node.args and _str_const(node.args[0]) in TYPED:
        return "typed segment stripped with removeprefix"
    if isinstance(func, ast.Name) and func.id == "len" and node.args and _is_key(node.args[0]):
        return "len() of a key"
    for arg in node.args:
        if _str_const(arg) in HYPHENATED:
            return f"family literal {_str_const(arg)!r} passed to a call"
    return None


def _check(node: ast.AST, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Tuple):
        return _tuple_head(node, constants)
    if isinstance(node, ast.Subscript) and _is_key(node.value):
        return "subscript of a key"
    if isinstance(node, ast.Call):
        return _call(node)
    return _typed_segment(node)


def scan(root: Path) -> list[Finding]:
    """(module path relative to ``root``, line, what) for every place that handles keys by hand."""
    found: list[Finding] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(SKIPPED):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        constants = _module_constants(tree)
        for node in ast.walk(tree):
            what = _check(node, constants)
            if what is not None:
                found.append((rel, getattr(node, "lineno", 0), what))
    return found
