"""Performance rules: positive and negative cases for each."""

from __future__ import annotations

import pytest

from .helpers import analyze, hits


def test_membership_in_a_growing_list_inside_a_loop() -> None:
    src = """
    def dedupe(items):
        seen = []
        for item in items:
            if item not in seen:
                seen.append(item)
        return seen
    """
    (f,) = analyze(src)
    assert (f.line, f.rule, f.category, f.severity.value) == (
        5, "list-membership-in-loop", "performance", "low",
    )  # fmt: skip
    assert "set" in f.advice


@pytest.mark.parametrize(
    "setup",
    [
        "allowed = list(load())",
        "allowed = [x.id for x in load()]",
        "allowed = sorted(load())",
    ],
)
def test_membership_in_data_sized_lists(setup: str) -> None:
    src = f"""
    def f(items, load):
        {setup}
        return [i for i in items if i in allowed]
    """
    assert hits(src, "list-membership-in-loop") == [4]


def test_membership_in_list_parameter_and_inline_list_call() -> None:
    src = """
    def f(items: list[int], banned: list[int], other):
        out = []
        for i in items:
            if i in banned:
                continue
            if i in list(other):
                out.append(i)
        return out
    """
    assert hits(src, "list-membership-in-loop") == [5, 7]


@pytest.mark.parametrize(
    "src",
    [
        # a set is fine
        "def f(items, s):\n    seen = set()\n    for i in items:\n        if i in seen:\n"
        "            seen.add(i)\n",
        # a fixed list literal never grows
        "def f(items):\n    exts = ['.py', '.txt']\n    for i in items:\n        if i in exts:\n"
        "            print(i)\n",
        # an inline literal is constant-size
        "def f(items):\n    for i in items:\n        if i in ['a', 'b']:\n            print(i)\n",
        # not in a loop
        "def f(x, items: list[int]):\n    return x in items\n",
        # rebuilt on every iteration: a set would not help
        "def f(rows):\n    for row in rows:\n        cols = list(row)\n        if 'id' in cols:\n"
        "            print(row)\n",
        "def f(rows):\n    for row in rows:\n        if 'id' in list(row):\n            print(row)\n",
        # the name is sometimes not a list
        "def f(items, s):\n    seen = []\n    seen = set(s)\n    for i in items:\n"
        "        if i in seen:\n            print(i)\n",
        # an unannotated parameter may be anything
        "def f(items, seen):\n    for i in items:\n        if i in seen:\n            print(i)\n",
    ],
)
def test_membership_that_is_fine(src: str) -> None:
    assert hits(src, "list-membership-in-loop") == []


def test_string_concatenation_in_loop_reported_once_per_name() -> None:
    src = """
    def render(rows):
        out = ""
        for row in rows:
            out += row.name
            out += "\\n"
        return out
    """
    assert hits(src, "str-concat-in-loop") == [5]


def test_string_concatenation_in_while_and_fstring_init() -> None:
    src = """
    def f(parts, n):
        text: str = f"{n}:"
        while parts:
            text += parts.pop()
        return text
    """
    assert hits(src, "str-concat-in-loop") == [5]


@pytest.mark.parametrize(
    "src",
    [
        "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n",
        "def f(xs):\n    parts = []\n    for x in xs:\n        parts += [x]\n",
        "def f(xs):\n    for x in xs:\n        s = ''\n        s += x\n",
        "def f(xs):\n    s = ''\n    s += 'a'\n    return s\n",
        "def f(xs, s):\n    for x in xs:\n        s += x\n",
    ],
)
def test_concatenation_that_is_fine(src: str) -> None:
    assert hits(src, "str-concat-in-loop") == []


def test_nested_loops_over_the_same_sequence() -> None:
    src = """
    def dupes(users):
        pairs = []
        for a in users:
            for b in users:
                if a is not b and a.email == b.email:
                    pairs.append((a, b))
        for i in range(len(users)):
            for j in range(len(users)):
                pass
        for a in users:
            for b in users[1:]:
                pass
        for i in range(len(users)):
            for j in range(i + 1, len(users)):
                pass
        for a in users:
            for b in a.friends:
                pass
        return pairs
    """
    assert hits(src, "nested-loop-same-sequence") == [5, 9]


@pytest.mark.parametrize(
    "setup",
    ["chars = iter(text)", "chars = (c for c in text)", "chars = reversed(text)", "it = text"],
)
def test_nested_loops_consuming_one_iterator_are_linear(setup: str) -> None:
    name = setup.split()[0]
    src = f"""
    def lex(text):
        {setup}
        for c in {name}:
            if c == '"':
                for c in {name}:
                    if c == '"':
                        break
    """
    assert hits(src, "nested-loop-same-sequence") == []
    assert (
        hits(
            "def f(p):\n    with open(p) as fh:\n        for a in fh:\n"
            "            for b in fh:\n                pass\n",
            "nested-loop-same-sequence",
        )
        == []
    )


def test_nested_loop_that_runs_once_is_linear() -> None:
    src = """
    def fail_all(commands, error):
        for c in commands:
            if c.result is None:
                for other in commands:
                    other.result = error
                return
    """
    assert hits(src, "nested-loop-same-sequence") == []


def test_nested_loop_over_calls_is_not_assumed_equal() -> None:
    src = "def f(load):\n    for a in load():\n        for b in load():\n            pass\n"
    assert hits(src, "nested-loop-same-sequence") == []
