"""review.md rendering, and the findings data members complete their tasks with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscope_teams.agent.output import OutputType
from agentscope_teams.review import (
    RESULT_SCHEMA,
    Finding,
    ReviewResult,
    Severity,
    analyze_tree,
    findings_for_member,
    render_markdown,
)

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample_project"


def _finding(line: int, severity: Severity, rule: str = "S307", file: str = "a.py") -> Finding:
    return Finding(
        file=file,
        line=line,
        severity=severity,
        category="security",
        rule=rule,
        message=f"problem at {line}",
        advice="Do it another way.",
    )


def test_header_summary_and_sections_in_severity_order() -> None:
    by_member = {
        "security-scanner": [
            _finding(9, Severity.LOW, "S324"),
            _finding(3, Severity.CRITICAL),
            _finding(5, Severity.HIGH, "S608"),
            _finding(1, Severity.HIGH, "S608", file="b.py"),
        ],
        "reviewer": [],
    }
    md = render_markdown(by_member, "examples/sample_project", "offline (deterministic, no LLM)")
    lines = md.splitlines()
    assert lines[0] == "# Code review: examples/sample_project"
    assert "- **Model:** offline (deterministic, no LLM)" in lines
    assert "- **Reviewers:** security-scanner, reviewer" in lines
    for row in ("| critical | 1 |", "| high | 2 |", "| medium | 0 |", "| low | 1 |"):
        assert row in lines
    assert "| **total** | **4** |" in lines
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == ["## Summary", "## Critical (1)", "## High (2)", "## Low (1)"]
    assert (
        "- `a.py:3` — problem at 3 (S307, confidence medium) — fix: Do it another way. "
        "— found by security-scanner"
    ) in lines
    high = lines[lines.index("## High (2)") + 2 : lines.index("## High (2)") + 4]
    assert [h.split("`")[1] for h in high] == ["a.py:5", "b.py:1"]
    assert "## Clean files" not in md


def test_duplicate_reports_are_merged_and_credit_every_member() -> None:
    f = _finding(3, Severity.MEDIUM)
    md = render_markdown({"reviewer": [f], "perf-tester": [f]}, "t", "m")
    bullets = [line for line in md.splitlines() if line.startswith("- `")]
    assert bullets == [
        "- `a.py:3` — problem at 3 (S307, confidence medium) — fix: Do it another way. "
        "— found by reviewer, perf-tester"
    ]


def test_a_models_finding_without_advice_gets_the_rulebooks_advice() -> None:
    data = {
        "files": ["a.py"],
        "findings": [
            {
                "file": "a.py",
                "line": 3,
                "severity": "high",
                "category": "security",
                "rule": "S307",
                "message": "eval on the request body",
            },
            {
                "file": "a.py",
                "line": 4,
                "severity": "low",
                "category": "quality",
                "rule": "unspecified",
                "message": "looks odd",
            },
        ],
    }
    f, g = ReviewResult.model_validate(data).findings
    md = render_markdown({"security-scanner": [f], "reviewer": [g]}, "t", "m")
    assert "(S307, confidence medium) — fix: Parse the data with ast.literal_eval" in md
    assert "- `a.py:4` — looks odd (unspecified, confidence medium) — found by reviewer" in md


def test_no_findings_and_clean_files() -> None:
    md = render_markdown({"reviewer": []}, "proj", "m", clean_files=["b.py", "a.py", "a.py"])
    assert "No findings." in md
    assert "## Clean files" in md
    assert "No findings in `a.py`, `b.py`." in md


def test_sample_project_report() -> None:
    found = analyze_tree(SAMPLE)
    everything = [f for fs in found.values() for f in fs]
    by_member = {m: findings_for_member(m, everything) for m in ("reviewer", "security-scanner")}
    clean = [rel for rel, fs in found.items() if not fs]
    md = render_markdown(by_member, "examples/sample_project", "offline", clean_files=clean)
    assert "`app/utils.py:20` — Use of possibly insecure function" in md
    assert (
        md.index("## Critical") < md.index("## High") < md.index("## Medium") < md.index("## Low")
    )
    assert "perf-tester" not in md  # not among the members given
    assert "`app/models.py`" in md.split("## Clean files")[1]


def test_findings_data_round_trips_through_the_task_schema() -> None:
    """What the engines find goes through the board's schema check and back unchanged."""
    found = [f for fs in analyze_tree(SAMPLE).values() for f in fs]
    data = ReviewResult(files=sorted({f.file for f in found}), findings=found)
    sent = json.loads(data.model_dump_json())
    checked = OutputType.from_schema(RESULT_SCHEMA, "review").validate(sent)
    assert ReviewResult.model_validate(checked) == data


def test_the_schema_refuses_a_finding_without_a_line_or_with_an_unknown_severity() -> None:
    bad = {
        "files": ["a.py"],
        "findings": [
            {
                "file": "a.py",
                "severity": "urgent",
                "category": "quality",
                "rule": "x",
                "message": "m",
            }
        ],
    }
    with pytest.raises(ValueError) as err:
        OutputType.from_schema(RESULT_SCHEMA, "review").validate(bad)
    assert "findings.0" in str(err.value) and "line" in str(err.value)
    assert "urgent" in str(err.value)
