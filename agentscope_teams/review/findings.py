"""``Finding``: one problem at one line, and how members of the review team share them out.

Each team member reports only its own area (:data:`CATEGORY_OF_SPEC`). Findings travel between members
and the lead as text lines in the format the member specs ask for,
``SEVERITY file:line message — fix: advice [RULE; confidence C]`` (:meth:`Finding.to_line`,
:func:`parse_finding_lines`; the advice and the bracket are optional, so a model's plain
``SEVERITY file:line message`` lines parse too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Category = Literal["security", "performance", "quality"]

CATEGORY_OF_SPEC: dict[str, Category] = {
    "security-scanner": "security",
    "perf-tester": "performance",
    "reviewer": "quality",
}


class Severity(StrEnum):
    """How bad a finding is; ``rank`` orders them, critical first."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


class Confidence(StrEnum):
    """How sure the engine is that the pattern it matched is really there (not how bad it is)."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Finding(BaseModel):
    """A problem at ``file:line`` (1-based; ``file`` relative to the reviewed root, POSIX separators).

    ``rule`` is the engine's code (ruff's ``B006``, ``S608`` for security checks whether ruff or
    bandit found them) or one of this project's rule names (``str-concat-in-loop``); ``message``
    says what is wrong, ``advice`` how to fix it, in one line each.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    line: int = Field(ge=1)
    severity: Severity
    category: Category
    rule: str
    message: str
    confidence: Confidence = Confidence.MEDIUM
    advice: str = ""

    @property
    def sort_key(self) -> tuple[str, int, str, str]:
        return (self.file, self.line, self.rule, self.message)

    def to_line(self, *, short: bool = False) -> str:
        """``SEVERITY file:line message — fix: advice [RULE; confidence C]``, the result format of
        the member specs; ``short`` leaves the advice out."""
        fix = f"{FIX}{self.advice}" if self.advice and not short else ""
        tail = f"[{self.rule}; confidence {self.confidence.value}]"
        return f"{self.severity.value} {self.file}:{self.line} {self.message}{fix} {tail}"


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """By file, then line, then rule."""
    return sorted(findings, key=lambda f: f.sort_key)


def findings_for(category: Category, findings: Iterable[Finding]) -> list[Finding]:
    """The findings of one area (``"security"``, ``"performance"`` or ``"quality"``)."""
    return [f for f in findings if f.category == category]


def findings_for_member(spec_name: str, findings: Iterable[Finding]) -> list[Finding]:
    """The findings a team member (by spec name, e.g. ``"perf-tester"``) is responsible for.

    Unknown names get nothing: a member never reports outside its area.
    """
    category = CATEGORY_OF_SPEC.get(spec_name)
    return [] if category is None else findings_for(category, findings)


FIX = " \u2014 fix: "
_LINE = re.compile(
    r"^\s*[-*]?\s*(?P<sev>critical|high|medium|low)\b[\s:]*`?(?P<file>[^\s`:]+):(?P<line>\d+)`?"
    r"\s*[-:\u2014]*\s*(?P<msg>.*?)"
    r"\s*(?:\[(?P<rule>[A-Za-z0-9-]+)(?:;\s*confidence\s+(?P<conf>high|medium|low))?\])?\s*$",
    re.IGNORECASE,
)


def parse_finding_lines(
    text: str, category: Category, default_rule: str = "unspecified"
) -> list[Finding]:
    """Parse ``SEVERITY file:line message [rule]`` lines (as written by members); others are skipped."""
    out: list[Finding] = []
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if m is None or int(m["line"]) < 1 or not m["msg"]:
            continue
        message, _, advice = m["msg"].partition(FIX)
        out.append(
            Finding(
                file=m["file"],
                line=int(m["line"]),
                severity=Severity(m["sev"].lower()),
                category=category,
                rule=m["rule"] or default_rule,
                message=message.strip() or m["msg"],
                confidence=Confidence((m["conf"] or "medium").lower()),
                advice=advice.strip(),
            )
        )
    return out
