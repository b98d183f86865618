"""A description written over several lines whose continuation lines start at the left margin
(``<example>`` blocks, ``user: ...`` dialogue) is not YAML, and Claude Code does not load it either.
The error says which line breaks it, which key it belongs to and how to write it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams.errors import SpecError
from agentscope_teams.subagents import SubagentSpec

FILE = """---
name: simplifier
description: Use this agent after code was written. Examples:

<example>
Context: the user added a feature.
user: "Please add login"
</example>
model: inherit
---
You simplify code.
"""


def test_the_error_names_the_margin_line_and_the_block_form(tmp_path: Path) -> None:
    path = tmp_path / "simplifier.md"
    path.write_text(FILE)
    with pytest.raises(SpecError) as info:
        SubagentSpec.from_file(path)
    reason = info.value.reason
    assert "line 5 starts at the left margin" in reason
    assert "'description' (line 3)" in reason
    assert "description: |" in reason and "indented" in reason


def test_the_block_form_it_suggests_loads(tmp_path: Path) -> None:
    lines = FILE.split("\n")
    fixed = [lines[0], lines[1], "description: |", "  " + lines[2].removeprefix("description: ")]
    fixed += ["  " + line if line else "" for line in lines[3:8]]
    fixed += lines[8:]
    path = tmp_path / "simplifier.md"
    path.write_text("\n".join(fixed))
    spec = SubagentSpec.from_file(path)
    assert 'user: "Please add login"' in spec.description
