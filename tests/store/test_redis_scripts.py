"""The Redis store's Lua scripts have one home for each shared part: a line two scripts share comes
from a fragment composed into both (``_redis_scripts``), never from a copy."""

from __future__ import annotations

import itertools

from agentscope_teams.store import _redis_scripts as lua

#: Lines too plain to be logic of their own.
PLAIN = {"", "end", "else", "return out"}
FRAGMENTS = (
    lua._WRITE, lua._FOUND, lua._EXPECTED, lua._EXPECTED_OR_ANY, lua._NEXT, lua._TTL, lua._DONE
)  # fmt: skip
SCRIPTS = {
    "PUT": lua.PUT, "UPDATE": lua.UPDATE, "UPDATE_FIELDS": lua.UPDATE_FIELDS,
    "DELETE": lua.DELETE, "CREATE_THEN_GET": lua.CREATE_THEN_GET, "EXISTS": lua.EXISTS,
    "APPEND": lua.APPEND,
}  # fmt: skip


def _lines(script: str) -> set[str]:
    return {line.strip() for line in script.splitlines() if line.strip() not in PLAIN}


def _own(script: str) -> set[str]:
    """The lines of ``script`` that no composed fragment brought (a fragment that holds another
    is removed first)."""
    for fragment in FRAGMENTS:
        script = script.replace(fragment, "\n")
    return _lines(script)


def test_a_line_two_scripts_share_comes_from_one_fragment() -> None:
    composed = set().union(*map(_lines, FRAGMENTS))
    for name, script in SCRIPTS.items():
        assert not _own(script) & composed, f"{name} copies a fragment instead of composing it"
    for (a, one), (b, other) in itertools.combinations(SCRIPTS.items(), 2):
        copied = _own(one) & _own(other)
        assert not copied, f"{a} and {b} both hold {sorted(copied)}: give it one fragment"


def test_the_conditional_writes_are_composed_of_the_fragments() -> None:
    head = lua._FOUND + lua._EXPECTED + lua._WRITE
    assert lua.UPDATE.startswith(head)
    # the fields it keeps are checked before anything is written
    assert lua.UPDATE_FIELDS.startswith(lua._FOUND + lua._EXPECTED + lua._KEEP + lua._WRITE)
    assert lua.UPDATE.endswith(lua._TTL + lua._DONE) and lua.UPDATE_FIELDS.endswith(
        lua._TTL + lua._DONE
    )
    assert lua.PUT.startswith(lua._FOUND + lua._EXPECTED_OR_ANY + lua._WRITE + lua._TTL)
    assert all(s.count(lua._DONE) == 1 for s in (lua.PUT_FENCED, lua.UPDATE_FIELDS_FENCED))
