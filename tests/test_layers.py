"""The package's layers only import downward: walking every import (including lazy and
type-checking ones) finds no edge from a lower layer to a higher one."""

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
    #: Which JSON schemas we accept and how data is checked against them (imports errors only).
    "schema_guard": 1,
    "message": 1,
    "state": 2,
    "store": 3,
    "keys": 4,
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
    "skills": 10,
    "subagents": 11,
    "teams": 12,
    "compose": 13,
    "review": 14,
    #: Our agents (compose) as MCP tools: an MCP server over the official SDK.
    "mcp_server": 14,
    "server": 15,
    "cli": 16,
    "__init__": 17,
    "__main__": 18,
}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path, package: Path) -> tuple[str, str]:
    """(module, package) of a file of ``package``."""
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def _targets(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import of the package's own modules in ``path``."""
    _, package = _module_name(path, root)
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
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


def test_no_module_imports_a_higher_layer() -> None:
    assert upward_edges() == []


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
