"""What the source says about a finding beyond the rule: suppressions, stubs, demo blocks, reach.

- ``# noqa`` (bare, or naming the rule: ``# noqa: S608``) and ``# nosec`` (bare, or naming the
  check: ``# nosec B608`` / ``S608``) on the flagged line drop the finding; ``# nosec`` applies to
  security findings only. ruff and bandit honour their own comment already; this applies both to
  every engine, and ``# noqa: str-concat-in-loop`` to this project's rules.
- Findings on the ``def`` line of an ``@overload`` stub are dropped (a stub is a type signature).
- Engine findings the code itself answers are dropped: ``F821`` (undefined name) for a name the
  file probes inside a ``try`` whose handler catches ``NameError`` (or ``Exception``), e.g.
  ``get_ipython`` in a notebook, ``B018`` (useless expression) on such a probe line, and
  ``B019`` (cache on a method) when the cache is bounded (``lru_cache(maxsize=N)``): the leak it
  warns of is at most N entries.
- **Reachability, the only way to high or critical.** A dangerous call (a rule with a ``sink``
  severity, e.g. ``S608``, ``S602``, ``S301``) is raised to that severity when its line reads
  outside input: a parameter of a public function (name without a leading ``_``, in a module-level
  function or a method of a public class; ``self``/``cls`` and dunder methods excluded), a local
  assigned from one by plain data flow or string building (one forward pass; the result of any
  other call is new data: ``row = conn.execute(q, (key,)).fetchone()`` does not carry ``key``),
  ``input()``, ``sys.argv`` or ``request.*``. Inside an
  ``if __name__ == "__main__":`` block nothing is raised: a demo block is not an entry point.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z0-9_,\s-]+))?", re.IGNORECASE)
_NOSEC = re.compile(r"#\s*nosec\b:?\s*(?P<codes>[A-Za-z0-9_,\s-]*)", re.IGNORECASE)
OUTSIDE_NAMES = frozenset({"input", "argv", "request"})
ALL = "*"
STRING_BUILDERS = frozenset({"str", "format", "join", "strip", "lower", "upper"})


@dataclass
class SourceFacts:
    """The facts of one file that decide whether a finding stays and how severe it is."""

    noqa: dict[int, set[str]] = field(default_factory=dict)
    nosec: dict[int, set[str]] = field(default_factory=dict)
    stub_lines: set[int] = field(default_factory=set)
    demo_lines: set[int] = field(default_factory=set)
    answered: set[tuple[int, str]] = field(default_factory=set)
    probed: set[str] = field(default_factory=set)
    tree: ast.Module | None = None
    nodes: list[ast.AST] = field(default_factory=list)
    _outside: set[int] | None = None

    def reads_outside_input(self, line: int) -> bool:
        """Whether ``line`` reads outside input (see the module docs); worked out on first use,
        since most files have no dangerous call to ask about."""
        if self._outside is None:
            self._outside = _outside_lines(self.tree, self.nodes) if self.tree else set()
        return line in self._outside and line not in self.demo_lines

    def suppressed(self, line: int, rule: str, security: bool) -> bool:
        """Whether a comment on ``line`` turns ``rule`` off (S608 and B608 name one check)."""
        names = {rule, "B" + rule[1:]} if re.fullmatch(r"S\d{3}", rule) else {rule}
        noqa = self.noqa.get(line)
        if noqa is not None and (ALL in noqa or names & noqa):
            return True
        nosec = self.nosec.get(line)
        return security and nosec is not None and (ALL in nosec or bool(names & nosec))


def facts_of(
    source: str, tree: ast.Module | None, nodes: list[ast.AST] | None = None
) -> SourceFacts:
    """The :class:`SourceFacts` of ``source`` (``tree``: its parse, None if it does not parse;
    ``nodes``: every node of the tree, if already listed)."""
    facts = SourceFacts(tree=tree, nodes=nodes or (list(ast.walk(tree)) if tree else []))
    _comments(source, facts)
    _stubs_and_demos(facts.nodes, facts)
    return facts


def _outside_lines(tree: ast.Module, nodes: list[ast.AST]) -> set[int]:
    lines = _direct_input_lines(nodes)
    for fn, public in _functions(tree):
        if public:
            lines |= _tainted_lines(fn)
    return lines


def _codes(text: str | None) -> set[str]:
    words = {w for w in re.split(r"[\s,]+", text or "") if w}
    return words or {ALL}


def _comments(source: str, facts: SourceFacts) -> None:
    """Suppression comments; only lines that mention one are tokenized (tokenizing a whole file
    costs more than all the rules together)."""
    lowered = source.lower()
    if "noqa" not in lowered and "nosec" not in lowered:
        return
    for line, comment in _comment_tokens(source):
        if (m := _NOQA.search(comment)) is not None:
            facts.noqa[line] = _codes(m["codes"])
        if (m := _NOSEC.search(comment)) is not None:
            first = (m["codes"] or "").split(" - ")[0].split("#")[0]
            codes = {c for c in _codes(first) if c == ALL or re.fullmatch(r"[BS]\d{3}", c)}
            facts.nosec[line] = codes or {ALL}


def _comment_tokens(source: str) -> list[tuple[int, str]]:
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        return [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []


def _is_overload(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for d in fn.decorator_list:
        name = d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")
        if name == "overload":
            return True
    return False


def _is_main_guard(node: ast.If) -> bool:
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.comparators) == 1):
        return False
    sides = [test.left, test.comparators[0]]
    has_name = any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    has_main = any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)
    return has_name and has_main


def _span(node: ast.AST) -> set[int]:
    start = getattr(node, "lineno", 1)
    return set(range(start, (getattr(node, "end_lineno", None) or start) + 1))


def _stubs_and_demos(nodes: list[ast.AST], facts: SourceFacts) -> None:
    for node in nodes:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if _is_overload(node):
                facts.stub_lines |= {node.lineno, *(d.lineno for d in node.decorator_list)}
            facts.answered |= {(d.lineno, "B019") for d in node.decorator_list if _bounded(d)}
        elif isinstance(node, ast.If) and _is_main_guard(node):
            facts.demo_lines |= _span(node)
        elif isinstance(node, ast.Try) and any(_catches_name_error(h) for h in node.handlers):
            lines = {n for stmt in node.body for n in _span(stmt)}
            facts.answered |= {(n, "B018") for n in lines}
            facts.probed |= {name for stmt in node.body for name in _names(stmt)}


def _bounded(decorator: ast.expr) -> bool:
    """``lru_cache(maxsize=N)`` or ``lru_cache(N)`` with a number N."""
    if not isinstance(decorator, ast.Call):
        return False
    size = decorator.args[0] if decorator.args else None
    size = next((k.value for k in decorator.keywords if k.arg == "maxsize"), size)
    return isinstance(size, ast.Constant) and isinstance(size.value, int)


def _catches_name_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = {"NameError", "Exception", "BaseException"}
    return any(isinstance(k, ast.Name) and k.id in names for k in kinds)


def _functions(tree: ast.Module) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
    """Every function with whether it is a public entry (see the module docs)."""
    out: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]] = []

    def visit(body: list[ast.stmt], public_owner: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, public_owner and not node.name.startswith("_"))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                public = public_owner and not node.name.startswith("_")
                out.append((node, public))
                visit(node.body, False)

    visit(tree.body, True)
    return out


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _tainted_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int]:
    """Lines of ``fn`` whose statements read a parameter, or a local assigned from one."""
    args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    args += [a for a in (fn.args.vararg, fn.args.kwarg) if a is not None]
    tainted = {a.arg for a in args} - {"self", "cls"}
    lines: set[int] = set()
    stmts = [s for s in ast.walk(fn) if isinstance(s, ast.stmt) and s is not fn]
    for stmt in sorted(stmts, key=lambda s: (s.lineno, s.col_offset)):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        simple = not hasattr(stmt, "body")
        reads = _names(stmt) if simple else _header_names(stmt)
        if reads & tainted:
            value = getattr(stmt, "value", None)
            if isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign) and _carries(value):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                tainted |= {n for t in targets for n in _names(t)}
            lines |= _span(stmt) if simple else {stmt.lineno}
    return lines


def _carries(value: ast.AST | None) -> bool:
    """Whether an assigned value passes its input on as is: names, subscripts, attributes and
    string building (``+``, ``%``, f-strings, ``str()``, ``.format``, ``.join``), not the result
    of other calls (``conn.execute(q, (key,)).fetchone()`` is the database's data, not ``key``)."""
    for node in ast.walk(value) if value is not None else ():
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in STRING_BUILDERS:
                return False
    return value is not None


def _header_names(stmt: ast.stmt) -> set[str]:
    """Names read by a compound statement's own header (``with x:``, ``for a in b:``, ``if c:``)."""
    parts: list[ast.AST] = []
    for name in ("test", "iter", "items", "subject"):
        value = getattr(stmt, name, None)
        if isinstance(value, list):
            parts += value
        elif isinstance(value, ast.AST):
            parts.append(value)
    return set().union(*(_names(p) for p in parts)) if parts else set()


def _direct_input_lines(nodes: list[ast.AST]) -> set[int]:
    lines: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "input":
                lines.add(node.lineno)
        elif (isinstance(node, ast.Attribute) and node.attr == "argv") or (
            isinstance(node, ast.Name) and node.id == "request"
        ):
            lines.add(node.lineno)
    return lines
