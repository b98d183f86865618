"""Quality rules: positive and negative cases for each."""

from __future__ import annotations

from agentscope_teams.review import QualityLimits, Severity

from .helpers import analyze, hits


def _function(statements: int, name: str = "f") -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(statements - 1))
    return f"def {name}():\n    '''Docstring, not counted.'''\n{body}    return 0\n"


def test_long_function_reported_at_def_line() -> None:
    assert hits(_function(60), "long-function") == []
    (f,) = analyze("\n\n" + _function(61))
    assert (f.line, f.rule, f.severity) == (3, "long-function", Severity.LOW)
    (g,) = analyze(_function(121))
    assert g.severity is Severity.MEDIUM


def test_limits_are_configurable() -> None:
    limits = QualityLimits(max_statements=5, max_depth=1, max_params=2)
    src = "def f(a, b, c):\n    if a:\n        if b:\n            return c\n"
    found = {(f.line, f.rule) for f in analyze(src, limits)}
    assert found == {(1, "too-many-params"), (4, "deep-nesting")}
    assert {f.rule for f in analyze(_function(6), limits)} == {"long-function"}


def test_decorated_function_is_reported_at_def_line() -> None:
    src = "import functools\n@functools.cache\ndef f(a, b, c, d, e, f, g, h):\n    pass\n"
    assert hits(src, "too-many-params") == [3]


def test_deep_nesting_reported_once_at_first_deep_statement() -> None:
    src = """
    def f(rows):
        for row in rows:
            if row:
                with open(row) as fh:
                    try:
                        if fh:
                            print(fh)
                            if row:
                                print(row)
                    finally:
                        pass
    """
    assert hits(src, "deep-nesting") == [8]


def test_elif_chains_and_nested_functions_are_not_deeper() -> None:
    src = """
    def f(x, rows):
        for row in rows:
            if x == 1:
                pass
            elif x == 2:
                pass
            elif x == 3:
                pass
            elif x == 4:
                if row:
                    print(row)
        def inner():
            for r in rows:
                if r:
                    print(r)
        return inner
    """
    assert hits(src, "deep-nesting") == []


def test_bare_except_and_swallowed_exceptions() -> None:
    src = """
    def f(log):
        try:
            pass
        except:
            pass
        try:
            pass
        except Exception:
            pass
        try:
            pass
        except (ValueError, BaseException):
            ...
        try:
            pass
        except KeyError:
            pass
        try:
            pass
        except Exception as exc:
            log.warning("failed: %s", exc)
    """
    found = [(f.line, f.rule) for f in analyze(src)]
    assert found == [(5, "bare-except"), (9, "swallowed-exception"), (13, "swallowed-exception")]


def test_mutable_defaults_one_finding_per_function() -> None:
    src = """
    def f(a, b=[], c=None, *, d={}, e=()):
        pass
    def g(a=None, b=(), c=frozenset()):
        pass
    def h(
        a,
        b=set(),
    ):
        pass
    """
    found = [(f.line, f.rule) for f in analyze(src)]
    assert found == [(2, "mutable-default"), (8, "mutable-default")]
    assert "b=[], d={}" in analyze(src)[0].message


def test_too_many_params_ignores_self() -> None:
    src = """
    class C:
        def ok(self, a, b, c, d, e, f, g):
            pass
        def too_many(self, a, b, c, d, e, f, g, *, h):
            pass
    """
    assert hits(src, "too-many-params") == [5]
