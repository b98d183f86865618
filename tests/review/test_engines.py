"""ruff and bandit as the engines: suppressions, stubs, demo blocks, reachability, merged checks."""

from __future__ import annotations

import textwrap

import pytest

from agentscope_teams.review import Finding, analyze_source, analyze_sources
from agentscope_teams.review.engines import run_engines


def review(source: str, path: str = "mod.py") -> list[Finding]:
    return analyze_source(path, textwrap.dedent(source))


def at(found: list[Finding], line: int) -> list[str]:
    return [f.rule for f in found if f.line == line]


def test_noqa_and_nosec_comments_drop_the_finding_they_name() -> None:
    found = review(
        """
        import subprocess
        def a(cmd):
            subprocess.run(cmd, shell=True)  # noqa: S602
        def b(cmd):
            subprocess.run(cmd, shell=True)  # nosec B602
        def c(cmd):
            subprocess.run(cmd, shell=True)  # nosec
        def d(cmd):
            subprocess.run(cmd, shell=True)  # noqa: E501
        def e(items=[]):  # noqa
            return items
        def f(items=[]):  # nosec - not a security finding, so it stays
            return items
        """
    )
    assert at(found, 4) == [] and at(found, 6) == [] and at(found, 8) == []
    assert at(found, 10) == ["S602"]  # a noqa for another rule does not hide it
    assert at(found, 11) == []
    assert at(found, 13) == ["B006"]


def test_own_rules_honour_noqa_too() -> None:
    found = review(
        """
        def render(rows):
            out = ""
            for row in rows:
                out += row  # noqa: str-concat-in-loop
            text = ""
            for row in rows:
                text += row
            return out + text
        """
    )
    assert [(f.line, f.rule) for f in found] == [(8, "str-concat-in-loop")]


def test_overload_stubs_are_not_functions_with_too_many_parameters() -> None:
    found = review(
        """
        from typing import overload
        @overload
        def fetch(a: int, b: int, c: int, d: int, e: int, f: int, g: int, h: int) -> int: ...
        @overload
        def fetch(a: str, b: int, c: int, d: int, e: int, f: int, g: int, h: int) -> str: ...
        def fetch(a, b, c, d, e, f, g, h):
            return a
        """
    )
    assert [(f.line, f.rule) for f in found] == [(7, "PLR0917")]


def test_severity_rises_only_with_outside_input_and_never_in_a_demo_block() -> None:
    """High and critical need evidence: the flagged line reads a parameter of a public function
    (or a local carrying it), input(), sys.argv or request; never in a __main__ block."""
    found = review(
        """
        import pickle
        import subprocess
        import sys

        def run(command: str) -> None:
            subprocess.run(command, shell=True)

        def _helper(command: str) -> None:
            subprocess.run(command, shell=True)

        def nightly() -> None:
            subprocess.run("make clean", shell=True)

        def load(conn, key):
            row = conn.execute("SELECT payload FROM cache WHERE key = ?", (key,)).fetchone()
            return pickle.loads(row[0])

        def restore(blob: bytes):
            data = blob
            return pickle.loads(data)

        if __name__ == "__main__":
            subprocess.run(sys.argv[1], shell=True)
            try:
                import readline
            except:
                pass
        """
    )
    assert [f.rule for f in found if f.line > 24] == []  # a demo's quality is not reviewed
    severity = {f.line: f.severity.value for f in found if f.rule in ("S602", "S301")}
    assert severity == {
        7: "critical",  # a parameter of a public function
        10: "medium",  # a private helper: no evidence it is an entry point
        13: "medium",  # a constant command
        17: "medium",  # the database's bytes, not the caller's key
        21: "critical",  # the parameter, through a plain assignment
        24: "medium",  # sys.argv, but in a demo block
    }


def test_security_checks_both_engines_find_are_one_finding_with_bandits_confidence() -> None:
    found = review(
        """
        import hashlib
        def digest(data):
            return hashlib.md5(data).hexdigest()
        def query(cur, name):
            cur.execute("SELECT * FROM t WHERE name = '%s'" % name)
        """
    )
    assert [(f.line, f.rule, f.confidence.value) for f in found] == [
        (4, "S324", "high"),
        (6, "S608", "medium"),
    ]
    assert all(f.advice for f in found)


def test_a_key_in_a_known_format_is_found_whatever_its_name() -> None:
    found = review(
        """
        BUCKET_ID = "AKIA4HXQ7KZL2MWP9RTB"
        api_password = "hunter2-but-longer"
        EXAMPLE = "AKIAEXAMPLEEXAMPLE12"
        """
    )
    assert [(f.line, f.rule) for f in found] == [(2, "hardcoded-secret"), (3, "S105")]


@pytest.mark.anyio
async def test_one_run_of_each_engine_serves_a_batch_of_files() -> None:
    sources = {"a/__init__.py": "import os\n", "b/x.py": "def f(a=[]):\n    return a\n"}
    hits = await run_engines(sources)
    assert [h.code for h in hits["a/__init__.py"]] == []
    assert [(h.engine, h.code) for h in hits["b/x.py"]] == [("ruff", "B006")]
    found = await analyze_sources(sources)
    assert found["a/__init__.py"] == [] and [f.rule for f in found["b/x.py"]] == ["B006"]


def test_findings_the_code_itself_answers_are_dropped() -> None:
    found = review(
        """
        from functools import lru_cache
        def in_notebook():
            try:
                get_ipython
            except NameError:
                return False
            return get_ipython() is not None
        class Color:
            @lru_cache(maxsize=1024)
            def blend(self, other):
                return other
            @lru_cache(maxsize=None)
            def mix(self, other):
                return other
        def plot():
            return get_figure()
        """
    )
    assert [(f.line, f.rule) for f in found] == [(13, "B019"), (17, "F821")]
