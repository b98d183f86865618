"""``use_context`` and identifier checks: the per-call work of the context module (issue 26)."""

from __future__ import annotations

import contextlib
import unicodedata

import pytest

from agentscope_teams import context as context_mod
from agentscope_teams.context import (
    RuntimeContext,
    current_context,
    get_context,
    use_context,
    validate_identifier,
)

A = RuntimeContext(session_id="a", user_id="u")
B = RuntimeContext(session_id="b", user_id="u")


def test_use_context_sets_the_context_inside_and_restores_it_after() -> None:
    assert get_context() is None
    with use_context(A) as entered:
        assert entered is A and current_context() is A
        with use_context(B):
            assert current_context() is B
        assert current_context() is A
    assert get_context() is None


def test_use_context_restores_the_context_when_the_block_raises() -> None:
    with pytest.raises(ValueError, match="boom"), use_context(A):
        raise ValueError("boom")
    assert get_context() is None


def test_use_context_is_a_small_class_that_refuses_to_be_entered_twice_at_once() -> None:
    scope = use_context(A)
    assert not isinstance(scope, contextlib._GeneratorContextManager)
    assert not hasattr(scope, "__dict__")
    with scope:
        with pytest.raises(RuntimeError, match="already entered"):
            scope.__enter__()
        assert current_context() is A
    assert get_context() is None
    with scope:  # entered again once it was left
        assert current_context() is A


def test_use_context_decorates_a_function_each_call_with_a_scope_of_its_own() -> None:
    @use_context(A)
    def who(depth: int) -> list[str]:
        inner = who(depth - 1) if depth else []  # re-entered while the outer call runs
        return [current_context().session_id, *inner]

    assert who(2) == ["a", "a", "a"]
    assert who.__name__ == "who" and get_context() is None


@pytest.mark.parametrize("code", [*range(0x20), 0x7F, 0x85, 0x9F])
def test_an_identifier_with_a_control_character_is_refused(code: int) -> None:
    with pytest.raises(ValueError, match=f"control character U\\+{code:04X}"):
        validate_identifier(f"a{chr(code)}b", "session_id")


@pytest.mark.parametrize("value", ["a b", "~!@#$%^&*()_+{}|:<>?", "é", "会话-1", "a\u00a0b"])
def test_printable_identifiers_are_accepted(value: str) -> None:
    assert validate_identifier(value, "session_id") == value


def test_a_printable_ascii_identifier_is_checked_without_a_per_character_lookup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every call validates its ids several times (context, key segments, workspace path): an
    ASCII id is checked by two ``str`` methods, not a Unicode category per character."""
    looked_up: list[str] = []
    original = unicodedata.category

    def category(ch: str) -> str:
        looked_up.append(ch)
        return original(ch)

    monkeypatch.setattr(context_mod.unicodedata, "category", category)
    validate_identifier("s-0123456789abcdef", "session_id")
    assert looked_up == []
    validate_identifier("sé", "session_id")  # not ASCII: checked character by character
    assert looked_up == ["s", "é"]
