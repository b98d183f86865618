"""The analyzer on the planted sample project (every planted problem it can find, nothing else) and
on bad input. ``PLANTED.json`` marks the two planted problems neither engine finds (``found: false``,
with the reason): they stay listed, so the sample's README stays true."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from agentscope_teams.review import (
    CATEGORY_OF_SPEC,
    OWN_RULES,
    Finding,
    analyze_source,
    analyze_tree,
    findings_for_member,
    python_files,
    rule_for,
)

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample_project"
PLANTED = json.loads((SAMPLE / "PLANTED.json").read_text())
MANIFEST = [p for p in PLANTED if p.get("found", True)]


def _found() -> dict[str, list[Finding]]:
    return analyze_tree(SAMPLE)


def test_finds_exactly_the_planted_problems() -> None:
    found = {
        (f.file, f.line, f.rule, f.category, f.severity.value)
        for findings in _found().values()
        for f in findings
    }
    planted = {(p["file"], p["line"], p["rule"], p["category"], p["severity"]) for p in MANIFEST}
    assert found - planted == set(), "reported something that is not planted"
    assert planted - found == set(), "missed a planted problem"


def test_manifest_covers_the_own_rules_and_both_engines() -> None:
    rules = {p["rule"] for p in MANIFEST}
    assert set(OWN_RULES) <= rules
    assert {"B006", "E722", "PLR0917", "S608", "S602", "S301"} <= rules
    for p in PLANTED:
        assert rule_for(p["rule"]).category == p["category"]
        assert (SAMPLE / p["file"]).read_text().splitlines()[p["line"] - 1].strip()
    assert all(p["why"] for p in PLANTED if not p.get("found", True))


def test_high_and_critical_only_where_outside_input_reaches_the_call() -> None:
    raised = {
        (f.file, f.line): f.message
        for fs in _found().values()
        for f in fs
        if f.severity.value in ("critical", "high")
    }
    assert set(raised) == {
        ("app/utils.py", 20), ("app/utils.py", 36), ("app/utils.py", 40),
        ("app/db.py", 20), ("app/db.py", 31), ("app/db.py", 62),
    }  # fmt: skip
    assert all(m.endswith("(reads outside input)") for m in raised.values())
    # the cached report's payload comes from the database, not from the caller's key
    (pickle,) = [f for f in _found()["app/db.py"] if f.rule == "S301"]
    assert pickle.severity.value == "medium"


def test_noqa_and_nosec_in_the_sample_are_honoured() -> None:
    lines = {(f.file, f.line) for fs in _found().values() for f in fs}
    assert ("app/config.py", 18) not in lines  # silenced for S105: a form field name
    assert ("app/db.py", 52) not in lines and ("app/db.py", 58) not in lines  # bandit-silenced


def test_clean_files_have_no_findings() -> None:
    found = _found()
    planted_files = {p["file"] for p in MANIFEST}
    clean = [rel for rel in python_files(SAMPLE) if rel not in planted_files]
    assert {"app/models.py", "app/pagination.py"} <= set(clean)
    for rel in clean:
        assert found[rel] == [], rel


def test_sample_is_valid_python_using_only_stdlib_and_yaml() -> None:
    for rel in python_files(SAMPLE):
        tree = ast.parse((SAMPLE / rel).read_text(), filename=rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = [(node.module or "").split(".")[0]]
            else:
                continue
            for root in roots:
                assert root in sys.stdlib_module_names or root == "yaml", (rel, root)


def test_sample_has_no_marker_comments() -> None:
    for rel in python_files(SAMPLE):
        text = (SAMPLE / rel).read_text().lower()
        for marker in ("planted", "vulnerab", "# bad", "fixme"):
            assert marker not in text, (rel, marker)


@pytest.mark.parametrize("member", sorted(CATEGORY_OF_SPEC))
def test_each_member_gets_only_its_area(member: str) -> None:
    all_findings = [f for fs in _found().values() for f in fs]
    mine = findings_for_member(member, all_findings)
    expected = [p for p in MANIFEST if p["category"] == CATEGORY_OF_SPEC[member]]
    assert mine and len(mine) == len(expected)
    assert {f.category for f in mine} == {CATEGORY_OF_SPEC[member]}


def test_unknown_member_gets_nothing() -> None:
    all_findings = [f for fs in _found().values() for f in fs]
    assert findings_for_member("lead", all_findings) == []


def test_unparsable_source_yields_one_syntax_error_finding() -> None:
    findings = analyze_source("broken.py", "x = 1\ndef f(:\n    pass\n")
    assert len(findings) == 1
    (f,) = findings
    assert (f.file, f.line, f.rule, f.category) == ("broken.py", 2, "syntax-error", "quality")
    assert f.message and f.advice.startswith("Fix the syntax error")


def test_null_bytes_and_bad_encoding_do_not_crash(tmp_path: Path) -> None:
    assert "syntax-error" in [f.rule for f in analyze_source("nul.py", "x = 1\0\n")]
    (tmp_path / "latin.py").write_bytes(b"name = '\xe9t\xe9'\n")
    (f,) = analyze_tree(tmp_path)["latin.py"]
    assert f.rule == "syntax-error" and "UTF-8" in f.message


def test_deeply_nested_expression_does_not_crash() -> None:
    chain = " + ".join(["x"] * 3000)
    source = f"def f(cur, x):\n    cur.execute('SELECT * FROM t WHERE a = ' + {chain})\n"
    found = analyze_source("chain.py", source)
    assert all(f.file == "chain.py" for f in found)


def test_findings_are_sorted_and_deterministic() -> None:
    source = (SAMPLE / "app" / "db.py").read_text()
    first = analyze_source("app/db.py", source)
    assert first == analyze_source("app/db.py", source)
    assert [(f.line, f.rule) for f in first] == sorted((f.line, f.rule) for f in first)


def test_analyze_tree_reports_relative_posix_paths(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("def f(a=[]):\n    return a\n")
    (tmp_path / "pkg" / "__init__.py").write_text("from .mod import f\n")
    (tmp_path / "notes.txt").write_text("eval(x)\n")
    found = analyze_tree(tmp_path)
    assert set(found) == {"pkg/__init__.py", "pkg/mod.py"}
    (f,) = found["pkg/mod.py"]
    assert (f.file, f.line, f.rule) == ("pkg/mod.py", 1, "B006")
    assert found["pkg/__init__.py"] == []  # a re-export is not an unused import


def test_python_files_skips_hidden_and_virtualenv_dirs(tmp_path: Path) -> None:
    for rel in ("a.py", "sub/b.py", ".git/c.py", ".venv/lib/d.py", "venv/e.py", "__pycache__/f.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    assert python_files(tmp_path) == ["a.py", "sub/b.py"]
    assert analyze_tree(tmp_path) == {"a.py": [], "sub/b.py": []}
