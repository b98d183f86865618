"""Every third-party package the package imports is declared, and the core install stays small.

The rule (docs/architecture.md, "Dependencies"): a module imports, at module level or inside a
function, only core dependencies, unless it lies in one of the :data:`AREAS` below, where it may
also import what that area's extras declare. Each area's entry point turns the missing package
into a ``MissingDependencyError`` naming the extra (the last test hides the SDKs to check it).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agentscope_teams"

#: Module path (relative to the package; a prefix) -> the extras whose packages it may import.
AREAS: dict[str, set[str]] = {
    "model/anthropic": {"anthropic"},
    "model/openai": {"openai"},
    "store/sql/": {"sql", "mysql", "postgres"},
    "store/redis": {"redis"},
    "store/_redis": {"redis"},
    #: budgets on SQL stores (a store already opened: its driver is there) and the price database
    "usage/sql_docs.py": {"sql", "mysql", "postgres"},
    "usage/sql_pg.py": {"postgres"},
    "usage/prices.py": {"prices"},
    #: the URL openers name the driver a URL needs before importing the backend
    "store/openers.py": {"mysql", "postgres"},
    #: the store conformance suite shipped for third-party backends runs under pytest
    "testing/": {"testing"},
    #: the task board's native SQL queue and its tables
    "teams/queues/sql": {"sql", "mysql", "postgres"},
    "agentscope_import/sources.py": {"redis", "sql", "mysql", "postgres"},
    "server/": {"server"},
    "cli/serve_cmd.py": {"server"},
    "mcp/": {"mcp"},
    "mcp_server/": {"mcp"},
    "cli/mcp_serve_cmd.py": {"mcp"},
    "a2a/": {"a2a"},
    "a2a_server/": {"a2a"},
    "cli/a2a_serve.py": {"a2a", "server"},
    "tracing/": {"otel"},
    "tools/web/convert.py": {"web"},
    "review/engines.py": {"review"},
}

#: Never in a core install: the review app's engines (and bandit's plugin loader).
NOT_CORE = {"ruff", "bandit", "stevedore"}


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_name(r) for r in project["dependencies"]}
    extras = {e: {_name(r) for r in rs} for e, rs in project["optional-dependencies"].items()}
    return core, extras


def _imports() -> dict[str, set[str]]:
    """Third-party top-level import name -> the package modules (relative paths) importing it."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in {n.split(".")[0] for n in names}:
                if top not in sys.stdlib_module_names and top != "agentscope_teams":
                    found.setdefault(top, set()).add(path.relative_to(PACKAGE).as_posix())
    return found


def test_every_imported_package_is_declared_where_it_is_imported() -> None:
    core, extras = _declared()
    distributions = metadata.packages_distributions()
    problems = []
    for top, modules in sorted(_imports().items()):
        dists = {_name(d) for d in distributions.get(top, [])}
        assert dists, f"{top} (imported by {sorted(modules)}) is not installed: declare it"
        for module in sorted(modules):
            allowed = set(core)
            for prefix, names in AREAS.items():
                if module.startswith(prefix):
                    allowed |= set().union(*(extras[name] for name in names))
            if not dists & allowed:
                problems.append(f"{module} imports {top} ({', '.join(sorted(dists))})")
    assert not problems, "undeclared imports (see docs/architecture.md, Dependencies):\n" + (
        "\n".join(problems)
    )


def test_the_areas_name_real_extras_and_modules() -> None:
    _, extras = _declared()
    for prefix, names in AREAS.items():
        assert names <= set(extras), prefix
        assert any(p.relative_to(PACKAGE).as_posix().startswith(prefix) for p in PACKAGE.rglob("*"))


def test_every_extra_an_error_names_exists() -> None:
    _, extras = _declared()
    named = set()
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        named |= set(re.findall(r'MissingDependencyError\(\s*[^,]+,\s*"(\w[\w-]*)"', text))
    assert named, "the pattern no longer finds the errors"
    assert named <= set(extras), named - set(extras)


def test_a_core_install_pulls_neither_the_review_engines_nor_an_sdk() -> None:
    """The closure of the core requirements (read from the installed metadata) holds neither
    ruff, bandit nor stevedore; the model SDKs are extras."""
    core, extras = _declared()
    assert not (core & (NOT_CORE | {"openai", "anthropic"}))
    assert {"ruff", "bandit"} <= extras["review"] and {"openai"} <= extras["openai"]
    seen: set[str] = set()
    todo = list(core)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(name) or []:
            req = Requirement(text)  # one of its extras' requirements, or another Python's: skip
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(_name(req.name))
    assert not (seen & NOT_CORE), seen & NOT_CORE


def test_without_the_extras_their_entry_points_name_them() -> None:
    """With the SDKs and engines hidden, a model string that needs one and the review fail with
    MissingDependencyError naming the extra; the offline model and ScriptedModel still work."""
    code = textwrap.dedent(
        """
        import sys
        for name in ("openai", "anthropic", "ruff", "bandit"):
            sys.modules[name] = None  # as if not installed
        from agentscope_teams import MissingDependencyError, ScriptedModel, model_from_string
        from agentscope_teams.review.engines import require_engines
        for build in (
            lambda: model_from_string("openai:gpt-4o-mini", api_key="k"),
            lambda: model_from_string("dashscope:qwen-plus", api_key="k"),
            lambda: model_from_string("anthropic:claude-sonnet-4-5", api_key="k"),
            require_engines,
        ):
            try:
                build()
            except MissingDependencyError as exc:
                print(exc.extra, "|", exc)
        print(type(model_from_string("offline")).__name__, type(ScriptedModel(["x"])).__name__)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(" | ")[0] for line in lines[:4]] == [
        "openai",
        "openai",
        "anthropic",
        "review",
    ]
    assert "the model 'openai:gpt-4o-mini' needs openai" in lines[0]
    assert "pip install 'agentscope-teams[review]'" in lines[3] and "ruff, bandit" in lines[3]
    assert lines[4] == "OfflineReviewModel ScriptedModel"
