"""A ``tools:`` entry with no counterpart says what to do about it, in the load warning and in
``specs check --strict``: names run together without commas, a misspelt Claude Code name, or a name
that is no tool at all (an MCP tool is written ``mcp__<server>__<tool>``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams.subagents import load_specs
from agentscope_teams.subagents.strict import strict_problems


@pytest.mark.parametrize(
    ("tools", "hint"),
    [
        ("Read Grep", "separate tool names with commas: Read, Grep"),
        ("Read, Raed", "did you mean 'Read'?"),
        ("Read, browser-mcp", "mcp__<server>__<tool>"),
    ],
)
def test_the_warning_and_the_strict_error_say_what_to_do(
    tmp_path: Path, tools: str, hint: str
) -> None:
    (tmp_path / "helper.md").write_text(
        f"---\nname: helper\ndescription: Helps.\ntools: {tools}\n---\nHelp.\n"
    )
    result = load_specs(tmp_path, strict=False)
    assert any(hint in warning for warning in result.specs["helper"].warnings)
    problems = [str(p) for p in strict_problems(result, [])]
    assert problems and all(hint in p for p in problems), problems
