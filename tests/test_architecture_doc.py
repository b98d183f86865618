"""docs/architecture.md states what a test can hold: its layer table is tests/test_layers.py's
LAYERS, and its table of what ``import agentscope_teams`` loads is what a fresh process loads."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import agentscope_teams

from .test_layers import LAYERS

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def _rows(heading: str) -> list[list[str]]:
    """The body cells of the Markdown table whose header line starts with ``heading``."""
    text = DOC.read_text()
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # without the header and its rule


def _names(cell: str) -> list[str]:
    return [n.rstrip("/") for n in re.findall(r"`([^`]+)`", cell)]


def test_the_layer_table_is_the_layers_test() -> None:
    documented: dict[str, int] = {}
    for layer, modules, _ in _rows("| layer | modules |"):
        for name in _names(modules):
            documented[name] = int(layer)
    assert documented == LAYERS


def _loaded_in_a_fresh_process() -> set[str]:
    code = "import sys, agentscope_teams; print('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return {m for m in done.stdout.split() if m.startswith("agentscope_teams.")}


def _documented_loads() -> set[str]:
    """The modules the doc's table says ``import agentscope_teams`` loads."""
    prefix = "agentscope_teams."
    every = [i.name for i in pkgutil.walk_packages(agentscope_teams.__path__, prefix)]
    by_unit: dict[str, list[str]] = {}
    for name in every:
        by_unit.setdefault(name.split(".")[1], []).append(name)
    loaded: set[str] = set()
    for units, which in _rows("| unit | modules loaded |"):
        for unit in _names(units):
            own = by_unit[unit]
            named = {
                f"{prefix}{unit}" if n == "__init__" else f"{prefix}{unit}.{n}"
                for n in _names(which)
            }
            if which == "all":
                loaded |= set(own)
            elif which.startswith("all but"):
                loaded |= set(own) - named
            else:
                assert which.startswith("only"), which
                loaded |= named
    return loaded


def test_the_doc_says_which_modules_the_top_level_import_loads() -> None:
    actual, documented = _loaded_in_a_fresh_process(), _documented_loads()
    assert actual == documented, (
        f"loaded but not in docs/architecture.md: {sorted(actual - documented)}; "
        f"in the doc but not loaded: {sorted(documented - actual)}"
    )
