"""Run this project's own rules (no ruff or bandit) on a dedented snippet."""

from __future__ import annotations

import textwrap

from agentscope_teams.review import Finding
from agentscope_teams.review.analyzer import own_findings


def analyze(source: str) -> list[Finding]:
    return own_findings("snippet.py", textwrap.dedent(source))


def hits(source: str, rule: str) -> list[int]:
    """Lines where ``rule`` fired."""
    return [f.line for f in analyze(source) if f.rule == rule]
