"""``tools: Edit(src/**)`` limits every tool Claude Code's ``Edit`` stands for; a ``Bash(...)``
rule limits the tools that take a command, not ``bash_output`` or ``kill_shell``."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from agentscope_teams.errors import ToolError
from agentscope_teams.sandbox import UnsafeHostSandbox
from agentscope_teams.subagents.spawn import restrict_to_rules
from agentscope_teams.tools import shell_tools
from agentscope_teams.tools.base import Tool
from agentscope_teams.tools.filesystem import filesystem_tools


def _stubbed(tools: list[Tool]) -> dict[str, Tool]:
    async def ran(**arguments: Any) -> str:
        return "ran"

    return {t.name: dataclasses.replace(t, func=ran) for t in tools}


async def test_an_edit_rule_limits_multi_edit_too() -> None:
    tools = _stubbed(filesystem_tools())
    limited = {t.name: t for t in restrict_to_rules(list(tools.values()), ["Edit(src/**)"])}
    edits = [{"old_string": "a", "new_string": "b"}]
    for name, extra in (
        ("edit_file", {"old_string": "a", "new_string": "b"}),
        ("multi_edit", {"edits": edits}),
    ):
        assert await limited[name].func(path="src/a.py", **extra) == "ran"
        with pytest.raises(ToolError, match=r"only for calls matching Edit\(src/\*\*\)"):
            await limited[name].func(path="secrets/k", **extra)
    assert limited["write_file"] is tools["write_file"]  # Write is another tool
    assert limited["read_file"] is tools["read_file"]


async def test_a_bash_rule_leaves_bash_output_and_kill_shell_alone() -> None:
    tools = _stubbed(shell_tools(UnsafeHostSandbox()))
    limited = {t.name: t for t in restrict_to_rules(list(tools.values()), ["Bash(git diff:*)"])}
    assert await limited["bash"].func(command="git diff") == "ran"
    with pytest.raises(ToolError):
        await limited["bash"].func(command="git push")
    assert limited["bash_output"] is tools["bash_output"]
    assert limited["kill_shell"] is tools["kill_shell"]
    assert await limited["bash_output"].func(bash_id="b1") == "ran"
    assert await limited["kill_shell"].func(shell_id="b1") == "ran"
