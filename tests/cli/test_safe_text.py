"""``terminal_safe`` / ``json_safe``: what a terminal would obey is escaped, nothing else changes."""

from __future__ import annotations

import json

import pytest

from agentscope_teams.cli.safe_text import json_safe, terminal_safe


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("id\nrefused x", "id\\nrefused x"),
        ("back\rover", "back\\rover"),
        ("exe.\u202etxt", "exe.\\u202etxt"),
        ("in\u2066iso\u2069", "in\\u2066iso\\u2069"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("csi\x9b2J", "csi\\x9b2J"),
        ("bell\x07", "bell\\x07"),
        ("[red]x[/red] 名前 ñ", "[red]x[/red] 名前 ñ"),
    ],
)
def test_terminal_safe(raw: str, shown: str) -> None:
    assert terminal_safe(raw) == shown


def test_multiline_keeps_newlines_and_tabs_only() -> None:
    assert terminal_safe("a\n\tb\x1b\r", multiline=True) == "a\n\tb\\x1b\\r"


def test_json_safe_is_the_same_json() -> None:
    value = {"id": "x\u202e\x1b\x9b\u2028y"}
    text = json_safe(json.dumps(value, ensure_ascii=False))
    assert json.loads(text) == value
    assert not any(c in text for c in "\u202e\x1b\x9b\u2028")
