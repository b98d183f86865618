"""Static analysis of Python files: the reviewing done by the offline model.

``analyze_source`` is pure and deterministic; ``analyze_file`` and ``analyze_tree`` read from disk.
A file that cannot be parsed yields a single ``syntax-error`` finding instead of an exception.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

from . import rules_perf, rules_quality, rules_security
from ._astutil import ModuleContext
from .findings import Category, Finding, Severity, sort_findings
from .rules_quality import QualityLimits

DEFAULT_LIMITS = QualityLimits()
_RULES_BY_CATEGORY: dict[Category, tuple[str, ...]] = {
    "security": (
        "eval-call", "exec-call", "shell-injection", "yaml-unsafe-load", "unsafe-deserialization",
        "hardcoded-secret", "sql-injection", "tls-verify-disabled", "weak-password-hash",
    ),
    "performance": ("list-membership-in-loop", "str-concat-in-loop", "nested-loop-same-sequence"),
    "quality": (
        "long-function", "deep-nesting", "bare-except", "swallowed-exception", "mutable-default",
        "too-many-params", "syntax-error",
    ),
}  # fmt: skip
RULES: dict[str, Category] = {r: c for c, rules in _RULES_BY_CATEGORY.items() for r in rules}
"""Every rule id the analyzer reports, with its category."""
SKIP_DIRS = {"__pycache__", "node_modules", "venv", "site-packages"}


def analyze_source(
    path: str, source: str, *, limits: QualityLimits = DEFAULT_LIMITS
) -> list[Finding]:
    """Findings for one Python source text, reported as ``path``; sorted by line, then rule."""
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 1
        return [_unparsable(path, line, exc)]
    except RecursionError:
        return [_unparsable(path, 1, "the code is nested too deeply to analyze")]
    ctx = ModuleContext.build(path, tree)
    found: dict[tuple[int, str], Finding] = {}
    try:
        for f in _run_rules(ctx, limits):
            found.setdefault((f.line, f.rule), f)
    except RecursionError:
        return [_unparsable(path, 1, "the code is nested too deeply to analyze")]
    return sort_findings(found.values())


def _run_rules(ctx: ModuleContext, limits: QualityLimits) -> Iterator[Finding]:
    yield from rules_security.check(ctx)
    yield from rules_perf.check(ctx)
    yield from rules_quality.check(ctx, limits)


def _unparsable(path: str, line: int, error: object) -> Finding:
    return Finding(
        file=path,
        line=max(line, 1),
        severity=Severity.MEDIUM,
        category="quality",
        rule="syntax-error",
        message=f"could not parse: {error}",
    )


def analyze_file(root: Path, rel: str, *, limits: QualityLimits = DEFAULT_LIMITS) -> list[Finding]:
    """Findings for ``root / rel`` (``rel`` is what findings report). Non-Python files yield none."""
    rel = Path(rel).as_posix()
    if not rel.endswith(".py"):
        return []
    try:
        source = (root / rel).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return [_unparsable(rel, 1, f"not UTF-8 text ({exc.reason} at byte {exc.start})")]
    return analyze_source(rel, source, limits=limits)


def python_files(root: Path) -> list[str]:
    """Relative POSIX paths of the ``.py`` files under ``root``, sorted; hidden and venv dirs skipped."""
    out: list[str] = []
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).parts
        if any(p.startswith(".") or p in SKIP_DIRS for p in parts[:-1]):
            continue
        if path.is_file():
            out.append(path.relative_to(root).as_posix())
    return sorted(out)


def analyze_tree(
    root: Path, files: Iterable[str] | None = None, *, limits: QualityLimits = DEFAULT_LIMITS
) -> dict[str, list[Finding]]:
    """Findings per file for ``files`` (default: every Python file under ``root``); clean files map to []."""
    rels = python_files(root) if files is None else list(files)
    return {rel: analyze_file(root, rel, limits=limits) for rel in rels}
