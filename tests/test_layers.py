"""The package's layers only import downward: walking every import (including lazy and
type-checking ones) finds no edge from a lower layer to a higher one. Inside ``teams/`` the same
holds for its subpackages and modules (:data:`TEAMS_LAYERS`), and no import runs in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "agentscope_teams"

#: Lower number = lower layer. A unit may import its own modules and units of lower layers only.
LAYERS: dict[str, int] = {
    "_version": 0,
    "errors": 0,
    "context": 1,
    "tracing": 1,
    "trust": 1,
    #: Bearer tokens listed in an operator's file (mcp-serve, the A2A server).
    "token_file": 2,
    #: Which JSON schemas we accept and how data is checked against them (imports errors only).
    "schema_guard": 1,
    "message": 1,
    #: How stored records read across releases keep a newer release's fields (pydantic only).
    "records": 1,
    #: Configuration files read as text: UTF-8, a BOM dropped, one named error (errors only).
    "text_files": 1,
    "state": 2,
    "store": 3,
    "keys": 4,
    #: Test kits shipped for third parties (the store conformance suite); imports store only.
    "testing": 4,
    "listing": 4,
    "sessions": 5,
    #: Reads sessions stored by AgentScope itself (its Redis keys, its SQL table): backend details
    #: that stay out of ``sessions``, which knows only the store's narrow interface.
    "agentscope_import": 6,
    "model": 6,
    "events": 7,
    #: Budgets and shared rate limits around model calls: store operations (store's public
    #: interface), model requests and responses; the agent loop calls it.
    "usage": 7,
    "sandbox": 6,
    "tools": 7,
    #: Hooks: Claude Code's hook protocol; reads the tool-name table, called by the agent loop.
    "hooks": 8,
    "agent": 9,
    "mcp": 10,
    #: Remote A2A agents as subagents' models (the client side of the a2a-sdk).
    "a2a": 10,
    "skills": 10,
    #: A project's CLAUDE.md memory files and their imports (beside skills; the agent's extension).
    "project_memory": 10,
    "subagents": 11,
    "teams": 12,
    "compose": 13,
    "review": 14,
    #: Our agents (compose) as MCP tools: an MCP server over the official SDK.
    "mcp_server": 14,
    #: Our agents (compose) over A2A: an A2A server on the official a2a-sdk.
    "a2a_server": 14,
    "server": 15,
    "cli": 16,
    "__init__": 17,
    "__main__": 18,
}


#: The layers inside ``agentscope_teams.teams``, by subpackage or module, lowest first.
TEAMS_LAYERS: dict[str, int] = {
    #: The import hook of the old module paths (imports nothing of the package).
    "_moved": 0,
    #: Pure rules and records: models, limits, eligibility (the claim rule), transitions, schemas.
    "rules": 1,
    #: The board's queues: protocol, factory, the generic store queue, Redis and SQL.
    "queues": 2,
    "protocol": 3,
    "registry": 3,
    "directory": 3,
    "mailbox": 3,
    "results": 3,
    "board_reads": 4,
    "actor": 4,
    "summary": 4,
    "board": 5,
    "delivery": 5,
    #: When a team ends, what listings show, pruning ended teams (over the client protocol).
    "lifecycle": 5,
    #: TaskCompleted for tasks failed by lease expiry (the client calls it before a claim).
    "expiry": 5,
    "client": 6,
    #: The member's agent side: extension, tools, builder, runtime, slot, worker, review, work.
    "member": 7,
    #: The lead's agent side: extension, tools, tool calls, state.
    "lead": 8,
    "__init__": 9,
}


def _unit(module: str, depth: int = 1) -> str:
    parts = module.split(".")
    return parts[depth] if len(parts) > depth else "__init__"


def _module_name(path: Path, package: Path) -> tuple[str, str]:
    """(module, package) of a file of ``package``."""
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines of the ``if TYPE_CHECKING:`` blocks of ``tree``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def _targets(path: Path, root: Path, run_time: bool = False) -> list[tuple[int, str]]:
    """(line, imported module) for every import of the package's own modules in ``path``
    (with ``run_time``: not those under ``if TYPE_CHECKING:``, and each name imported from a
    module as a possible submodule too)."""
    _, package = _module_name(path, root)
    found: list[tuple[int, str]] = []
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_lines(tree) if run_time else set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if node.module is None:  # "from .. import x": x is a module of that package
                found += [(node.lineno, f"{module}.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, module))
                if run_time:  # "from pkg import mod" imports pkg.mod when it is a module
                    found += [(node.lineno, f"{module}.{a.name}") for a in node.names]
    return [(line, m) for line, m in found if m.split(".")[0] == "agentscope_teams"]


def upward_edges(root: Path = PACKAGE) -> list[str]:
    problems: list[str] = []
    for path in sorted(root.rglob("*.py")):
        module, _ = _module_name(path, root)
        here = _unit(module)
        for line, target in _targets(path, root):
            there = _unit(target)
            if there == here:
                continue
            if here not in LAYERS or there not in LAYERS:
                problems.append(f"{path.name}:{line}: {here} -> {there}: give it a layer")
            elif LAYERS[there] >= LAYERS[here]:
                rel = path.relative_to(root.parent)
                problems.append(f"{rel}:{line}: {here} (layer {LAYERS[here]}) imports {target}")
    return problems


def teams_upward_edges(root: Path = PACKAGE) -> list[str]:
    """Imports inside ``teams/`` from a lower unit of :data:`TEAMS_LAYERS` to a higher one."""
    problems: list[str] = []
    teams = root / "teams"
    for path in sorted(teams.rglob("*.py")):
        module, _ = _module_name(path, root)
        here = _unit(module, 2)
        for line, target in _targets(path, root):
            if _unit(target) != "teams":
                continue
            there = _unit(target, 2)
            rel = path.relative_to(root.parent)
            if here not in TEAMS_LAYERS or there not in TEAMS_LAYERS:
                problems.append(f"{rel}:{line}: teams.{here} -> teams.{there}: give it a layer")
            elif there != here and TEAMS_LAYERS[there] >= TEAMS_LAYERS[here]:
                problems.append(f"{rel}:{line}: teams.{here} imports {target}")
    return problems


def import_cycles(root: Path = PACKAGE, sub: str = "teams") -> list[list[str]]:
    """Circles of run-time imports (type-checking ones left out) among the modules of ``sub``."""
    graph: dict[str, set[str]] = {}
    for path in sorted((root / sub).rglob("*.py")):
        module, _ = _module_name(path, root)
        graph[module] = set()
        for _, target in _targets(path, root, run_time=True):
            graph[module].add(target)
    modules = set(graph)
    for module, targets in graph.items():  # "from pkg import name" may name a module or a name
        graph[module] = {t for t in targets if t in modules and t != module}
    return [sorted(c) for c in _strongly_connected(graph) if len(c) > 1]


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of ``graph``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            out.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_imports_a_higher_layer() -> None:
    assert upward_edges() == []


def test_teams_subpackages_only_import_downward() -> None:
    assert teams_upward_edges() == []


def test_no_import_circle_inside_teams() -> None:
    assert import_cycles() == []


def test_the_teams_checks_see_upward_arrows_and_circles(tmp_path: Path) -> None:
    """The checkers themselves: a rule importing a queue, and two modules importing each other
    (a type-checking import does not make a circle)."""
    root = tmp_path / "agentscope_teams"
    (root / "teams" / "rules").mkdir(parents=True)
    (root / "teams" / "queues").mkdir()
    (root / "teams" / "rules" / "a.py").write_text("from ..queues import b\n")
    (root / "teams" / "queues" / "b.py").write_text("from ..rules import a\n")
    (root / "teams" / "queues" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import d\n"
    )
    (root / "teams" / "queues" / "d.py").write_text("from . import c\n")
    assert [p.split(": ", 1)[0] for p in teams_upward_edges(root)] == [
        "agentscope_teams/teams/rules/a.py:1"
    ]
    assert import_cycles(root) == [
        ["agentscope_teams.teams.queues.b", "agentscope_teams.teams.rules.a"]
    ]


def test_the_walk_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    """The checker itself: a function-level relative import of a higher layer is reported."""
    root = tmp_path / "agentscope_teams"
    (root / "agent").mkdir(parents=True)
    (root / "agent" / "probe.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import extension\n"
        "from ..tools import Tool\n"
        "if TYPE_CHECKING:\n"
        "    from ..subagents import spec\n"
        "def f():\n"
        "    from agentscope_teams.teams import board\n"
    )
    found = upward_edges(root)
    assert [p.split(": ", 1)[0] for p in found] == [
        "agentscope_teams/agent/probe.py:5",
        "agentscope_teams/agent/probe.py:7",
    ], found
