"""Run the analyzer on a dedented snippet."""

from __future__ import annotations

import textwrap

from agentscope_teams.review import Finding, QualityLimits, analyze_source


def analyze(source: str, limits: QualityLimits | None = None) -> list[Finding]:
    text = textwrap.dedent(source)
    return analyze_source("snippet.py", text, limits=limits or QualityLimits())


def hits(source: str, rule: str) -> list[int]:
    """Lines where ``rule`` fired (the snippet must parse)."""
    found = analyze(source)
    assert not [f for f in found if f.rule == "syntax-error"], found
    return [f.line for f in found if f.rule == rule]
