"""A full ``python -m bench`` run rewrites bench/RESULTS.md's measured sections and keeps what
people wrote there: the ``### Issue NN`` investigations and the profile notes."""

from __future__ import annotations

import re
from pathlib import Path

from bench.results_file import RECORDED, merged

ROOT = Path(__file__).resolve().parents[1]

OLD = """# Benchmark results

### Store latency
old figures

### Issue 26 (h-a): first investigation
what was measured

### Claim cost
old claim figures

### Issue 27 (h-b): second investigation
more

## Profile notes: why
- a note

## Claude Code agent files
a hand table
"""

NEW = """# Benchmark results

### Store latency
new figures

### Claim cost
new claim figures
"""


def test_a_full_run_keeps_the_investigations_and_the_notes() -> None:
    text = merged(NEW, OLD)
    assert "new figures" in text and "new claim figures" in text
    assert "old figures" not in text and "old claim figures" not in text
    for kept in ("what was measured", "more", "- a note", "a hand table"):
        assert text.count(kept) == 1
    assert text.index(RECORDED) < text.index("### Issue 26") < text.index("### Issue 27")
    assert text.index("### Issue 27") < text.index("## Profile notes")


def test_a_second_run_keeps_them_once() -> None:
    once = merged(NEW, OLD)
    assert merged(NEW, once) == once


def test_the_real_results_file_loses_no_investigation() -> None:
    real = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    issues = re.findall(r"(?m)^### Issue \d+.*$", real)
    assert issues  # the file records investigations
    text = merged("# Benchmark results\n", real)
    assert re.findall(r"(?m)^### Issue \d+.*$", text) == issues
    notes = real[real.index("## Profile notes") :]
    assert text.endswith(notes.rstrip() + "\n")
