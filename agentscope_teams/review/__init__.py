"""Code review engine: static analysis rules, findings per team member, and the review.md report.

The offline model uses this engine to review the files it reads; it is plain ``ast`` analysis, not
an LLM. Rules (``Finding.rule``) by category:

- security: ``eval-call``, ``exec-call``, ``shell-injection``, ``yaml-unsafe-load``,
  ``unsafe-deserialization``, ``hardcoded-secret``, ``sql-injection``, ``tls-verify-disabled``,
  ``weak-password-hash``
- performance: ``list-membership-in-loop``, ``str-concat-in-loop``, ``nested-loop-same-sequence``
- quality: ``long-function``, ``deep-nesting``, ``bare-except``, ``swallowed-exception``,
  ``mutable-default``, ``too-many-params``, ``syntax-error``
"""

from __future__ import annotations

from .analyzer import (
    DEFAULT_LIMITS,
    RULES,
    analyze_file,
    analyze_source,
    analyze_tree,
    python_files,
)
from .findings import (
    CATEGORY_OF_SPEC,
    Category,
    Finding,
    Severity,
    findings_for,
    findings_for_member,
    parse_finding_lines,
    sort_findings,
)
from .report import render_markdown
from .rules_quality import QualityLimits

__all__ = [
    "CATEGORY_OF_SPEC",
    "DEFAULT_LIMITS",
    "Category",
    "Finding",
    "QualityLimits",
    "RULES",
    "Severity",
    "analyze_file",
    "analyze_source",
    "analyze_tree",
    "findings_for",
    "findings_for_member",
    "parse_finding_lines",
    "python_files",
    "render_markdown",
    "sort_findings",
]
