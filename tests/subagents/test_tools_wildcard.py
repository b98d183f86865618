"""``tools: "*"`` (Claude Code's spelling of "every tool", which its own built-in general-purpose
agent uses) selects what no ``tools:`` key selects: the parent's tools. It never leaves the agent
with no tools at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams.subagents import SubagentSpec


@pytest.mark.parametrize("written", ['"*"', "['*']", "'*'"])
def test_a_star_selects_every_tool(tmp_path: Path, written: str) -> None:
    path = tmp_path / "helper.md"
    path.write_text(f"---\nname: helper\ndescription: Helps.\ntools: {written}\n---\nHelp.\n")
    spec = SubagentSpec.from_file(path)
    assert spec.tools is None
    assert spec.unavailable_tools == [] and spec.warnings == []
