"""review.md rendering and the finding line format members use."""

from __future__ import annotations

from pathlib import Path

from agentscope_teams.review import (
    Finding,
    Severity,
    analyze_tree,
    findings_for_member,
    parse_finding_lines,
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


def test_a_models_line_without_advice_gets_the_rulebooks_advice() -> None:
    (f,) = parse_finding_lines("high a.py:3 eval on the request body [S307]", "security")
    (g,) = parse_finding_lines("low a.py:4 looks odd", "quality")
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


def test_finding_lines_round_trip() -> None:
    found = [f for fs in analyze_tree(SAMPLE).values() for f in fs]
    text = "\n".join(f.to_line() for f in found)
    assert parse_finding_lines(text, "security") == [
        f.model_copy(update={"category": "security"}) for f in found
    ]


def test_parse_finding_lines_tolerates_member_prose() -> None:
    text = (
        "Findings:\n"
        "HIGH app/db.py:20 user input reaches the SQL text\n"
        "- medium `app/x.py:7` — string += in a loop [str-concat-in-loop]\n"
        "no findings in app/models.py\n"
        "low app/y.py:0 line zero is invalid\n"
    )
    parsed = parse_finding_lines(text, "quality")
    assert [(f.severity, f.file, f.line, f.rule) for f in parsed] == [
        (Severity.HIGH, "app/db.py", 20, "unspecified"),
        (Severity.MEDIUM, "app/x.py", 7, "str-concat-in-loop"),
    ]
    assert parsed[0].message == "user input reaches the SQL text"
    assert parsed[1].message == "string += in a loop"
