"""Code review engine: ruff and bandit plus a few rules of this project, findings per team member,
and the review.md report.

The offline model uses this engine to review the files it reads (:mod:`.analyzer`: what runs, and
which rules are this project's own and why; :mod:`.rulebook`: the selection, severities and advice;
:mod:`.evidence`: ``# noqa`` / ``# nosec``, ``@overload`` stubs, demo blocks and the reachability
rule that alone makes a finding high or critical). It is static analysis, not an LLM.
"""

from __future__ import annotations

from .analyzer import OWN_RULES, analyze_source, analyze_sources, analyze_tree, python_files
from .findings import (
    CATEGORY_OF_SPEC,
    RESULT_SCHEMA,
    Category,
    Confidence,
    Finding,
    ReviewResult,
    Severity,
    findings_for,
    findings_for_member,
    review_result,
    sort_findings,
)
from .report import render_markdown
from .rulebook import RULES, Rule, rule_for

__all__ = [
    "CATEGORY_OF_SPEC",
    "OWN_RULES",
    "RESULT_SCHEMA",
    "RULES",
    "Category",
    "Confidence",
    "Finding",
    "ReviewResult",
    "Rule",
    "Severity",
    "analyze_source",
    "analyze_sources",
    "analyze_tree",
    "findings_for",
    "findings_for_member",
    "python_files",
    "review_result",
    "render_markdown",
    "rule_for",
    "sort_findings",
]
