"""Static analysis of Python sources: the reviewing done by the offline model.

One call of :func:`analyze_sources` runs ruff and bandit once on the whole batch (subprocesses,
:mod:`.engines`) and, in a worker thread, this project's own rules and the source facts of
:mod:`.evidence`; then it turns every hit into a :class:`Finding` with the area, severity,
confidence and advice of :mod:`.rulebook`, drops what ``# noqa`` / ``# nosec`` or an ``@overload``
stub rules out, keeps only security findings inside an ``if __name__ == "__main__":`` demo block
(a demo is not the library: its quality and speed are not reviewed, and its security findings are
never raised), raises a dangerous call to its sink severity only with evidence of outside input,
and merges the security checks both engines found (one finding, bandit's confidence).

This project's own rules, kept because neither tool has them (ruff's ``PERF`` rules are about
idioms, not growth; ruff and bandit judge a secret by the name it is bound to):

- performance: ``list-membership-in-loop``, ``str-concat-in-loop``, ``nested-loop-same-sequence``
  (:mod:`.rules_perf`): work that grows quadratically with the input;
- security: ``hardcoded-secret`` (:mod:`.rules_secrets`): keys recognisable by their format.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import anyio

from . import rules_perf, rules_secrets
from ._astutil import ModuleContext
from .engines import Hit, run_engines
from .evidence import SourceFacts, facts_of
from .findings import Confidence, Finding, Severity, sort_findings
from .rulebook import RULES, rule_for

_QUOTED = re.compile(r"`([^`]+)`")
NAME_BASED_SECRETS = ("S105", "S106", "S107")
SKIP_DIRS = {"__pycache__", "node_modules", "venv", "site-packages"}
OWN_RULES = ("list-membership-in-loop", "str-concat-in-loop", "nested-loop-same-sequence",
             "hardcoded-secret")  # fmt: skip


async def analyze_sources(sources: Mapping[str, str]) -> dict[str, list[Finding]]:
    """Findings per path of ``sources`` (path -> text), sorted by line, then rule; see the module
    docs. The engines run in subprocesses and the Python rules in a thread: the loop stays free."""
    local: dict[str, tuple[SourceFacts, list[Finding]]] = {}

    async def own() -> None:
        local.update(await anyio.to_thread.run_sync(_own_rules_all, dict(sources)))

    hits: dict[str, list[Hit]] = {}

    async def engines() -> None:
        hits.update(await run_engines(sources))

    async with anyio.create_task_group() as tg:
        tg.start_soon(own)
        tg.start_soon(engines)
    return {path: _combine(path, *local[path], hits.get(path, [])) for path in sources}


def analyze_source(path: str, source: str) -> list[Finding]:
    """:func:`analyze_sources` for one source, from synchronous code (no event loop running)."""
    return anyio.run(analyze_sources, {path: source})[path]


def own_findings(path: str, source: str) -> list[Finding]:
    """Only this project's rules on one source (no engines), finished like the others."""
    facts, own = _own_rules(path, source)
    return _combine(path, facts, own, [])


def _own_rules_all(sources: dict[str, str]) -> dict[str, tuple[SourceFacts, list[Finding]]]:
    return {path: _own_rules(path, text) for path, text in sources.items()}


def _own_rules(path: str, source: str) -> tuple[SourceFacts, list[Finding]]:
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError, RecursionError):
        return facts_of(source, None), []  # ruff reports the syntax error
    try:
        ctx = ModuleContext.build(path, tree)
        found = [*rules_perf.check(ctx), *rules_secrets.check(ctx)]
        return facts_of(source, tree, ctx.nodes), found
    except RecursionError:
        return facts_of(source, None), []


def _combine(path: str, facts: SourceFacts, own: list[Finding], hits: list[Hit]) -> list[Finding]:
    found: dict[tuple[int, str], Finding] = {}
    for f in own:
        found.setdefault((f.line, f.rule), _finish(path, f.rule, f.line, f.message, facts, None))
    syntax = [h for h in hits if h.code == "syntax-error"]
    if syntax:  # one finding: the first error; the rest follows from it
        first = min(syntax, key=lambda h: h.line)
        return [_finish(path, first.code, first.line, first.message, facts, None)]
    bandit = {(h.line, h.code): h for h in hits if h.engine == "bandit"}
    for h in hits:
        if h.engine == "bandit" and h.code.startswith("S"):
            continue  # a check ruff ports: ruff's finding stands, bandit lends its confidence
        confirmed = bandit.get((h.line, h.code))
        confidence = confirmed.confidence if confirmed is not None else None
        found.setdefault((h.line, h.code), _finish(path, h.code, h.line, h.message, facts,
                                                   confidence))  # fmt: skip
    secret_lines = {line for line, rule in found if rule == "hardcoded-secret"}
    for line in secret_lines:  # the key-format finding says more than the name-based one
        for code in NAME_BASED_SECRETS:
            found.pop((line, code), None)
    kept = (f for f in found.values() if _keep(f, facts))
    return sort_findings(kept)


def _keep(f: Finding, facts: SourceFacts) -> bool:
    if f.line in facts.stub_lines or (f.line, f.rule) in facts.answered:
        return False
    if f.rule == "F821" and (m := _QUOTED.search(f.message)) and m[1] in facts.probed:
        return False
    if f.line in facts.demo_lines and f.category != "security":
        return False
    return not facts.suppressed(f.line, f.rule, f.category == "security")


def _finish(
    path: str, code: str, line: int, message: str, facts: SourceFacts, confidence: Confidence | None
) -> Finding:
    rule = rule_for(code)
    severity = rule.severity
    if rule.sink is not None and facts.reads_outside_input(line):
        severity = rule.sink
    return Finding(
        file=path,
        line=line,
        severity=severity,
        category=rule.category,
        rule=code,
        message=_one_line(message) + (" (reads outside input)" if severity.rank < 2 else ""),
        confidence=confidence or rule.confidence,
        advice=rule.advice,
    )


def _one_line(text: str) -> str:
    first = " ".join(text.split())
    return first.rstrip(".")


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


def read_sources(
    root: Path, files: Iterable[str]
) -> Iterator[tuple[str, str | UnicodeDecodeError]]:
    """(path, text) of each file, or the decoding error of a file that is not UTF-8."""
    for rel in files:
        try:
            yield rel, (root / rel).read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            yield rel, exc


def analyze_tree(root: Path, files: Iterable[str] | None = None) -> dict[str, list[Finding]]:
    """Findings per file under ``root`` (default: every Python file); clean files map to [];
    a file that is not UTF-8 gets one ``syntax-error`` finding."""
    rels = python_files(root) if files is None else list(files)
    texts = dict(read_sources(root, rels))
    found = anyio.run(analyze_sources, {p: t for p, t in texts.items() if isinstance(t, str)})
    for path, text in texts.items():
        if isinstance(text, UnicodeDecodeError):
            why = f"not UTF-8 text ({text.reason} at byte {text.start})"
            found[path] = [_finish(path, "syntax-error", 1, why, SourceFacts(), None)]
    return {p: found[p] for p in rels}


__all__ = [
    "OWN_RULES",
    "RULES",
    "Severity",
    "analyze_source",
    "analyze_sources",
    "analyze_tree",
    "own_findings",
]
