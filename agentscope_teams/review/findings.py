"""``Finding``: one problem at one line, and how members of the review team share them out.

Each team member reports only its own area (:data:`CATEGORY_OF_SPEC`). Findings travel from the
members to the lead as data: the lead assigns each review task with :data:`RESULT_SCHEMA` (the JSON
schema of :class:`ReviewResult`), the board refuses a completion whose ``data`` does not match it
(the member gets a tool error listing every problem), and the lead and the CLI read the findings back
with :func:`review_result`. Nothing parses a model's text. :meth:`Finding.to_line` is for people
(and teammates' messages) only.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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

    model_config = ConfigDict(
        frozen=True, extra="forbid", json_schema_extra={"description": "One problem at one line."}
    )

    file: str = Field(description="The path as the task names it.")
    line: int = Field(ge=1, description="The 1-based line of the problem.")
    severity: Severity
    category: Category = Field(description="Your area: the kind of problem.")
    rule: str = Field(description="The rule or check, e.g. S608, B006, str-concat-in-loop.")
    message: str = Field(description="What is wrong, in one sentence.")
    confidence: Confidence = Confidence.MEDIUM
    advice: str = Field(default="", description="How to fix it, in one sentence.")

    @property
    def sort_key(self) -> tuple[str, int, str, str]:
        return (self.file, self.line, self.rule, self.message)

    def to_line(self, *, short: bool = False) -> str:
        """``SEVERITY file:line message — fix: advice [RULE; confidence C]``: one line for people
        (a task's result text, a message to a teammate; nothing parses it back, the data is the
        record); ``short`` leaves the advice out."""
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


class ReviewResult(BaseModel):
    """What a member completes a review task with (``completeTask(..., data=...)``)."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"description": "Your findings for one review task."}
    )

    files: list[str] = Field(
        description="The files of the task you reviewed, as the task names them."
    )
    findings: list[Finding] = Field(
        description="One entry per problem, in your own area only; an empty list if none."
    )


def _compact(schema: Any, *, in_properties: bool = False) -> Any:
    """``schema`` without pydantic's generated titles and the enums' docstrings (a model copies
    the schema into every ``assignTask`` call: keep only what tells it something)."""
    if isinstance(schema, list):
        return [_compact(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if not in_properties and key == "title":
            continue
        if not in_properties and key == "description" and "enum" in schema:
            continue
        out[key] = _compact(
            value, in_properties=key in ("properties", "$defs") and not in_properties
        )
    return out


#: The ``result_schema`` of every review task (``assignTask``), from :class:`ReviewResult`; the
#: lead prompt quotes it (a test keeps the two equal).
RESULT_SCHEMA: dict[str, Any] = _compact(ReviewResult.model_json_schema())


def review_result(data: Any) -> ReviewResult | None:
    """The findings data a task was completed with; None when there is none or it does not match
    (a task assigned without :data:`RESULT_SCHEMA`)."""
    if data is None:
        return None
    try:
        return ReviewResult.model_validate(data)
    except ValidationError:
        return None
