"""Claude Code's tool names in a spec's ``tools:``: mapped through one table, an allowlist for our
own tools too (``agent_*`` only when ``Agent``/``Task`` is listed), ``Agent(a, b)`` limiting which
agents a child may spawn, and ``MultiEdit`` applied all or nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel, SubagentSpec
from agentscope_teams.store import InMemoryStore
from agentscope_teams.tools.claude_code import (
    CLAUDE_TOOLS,
    UNSUPPORTED,
    claude_name_of,
    from_claude_input,
    parse_tool_entry,
    to_claude_input,
)

pytestmark = pytest.mark.anyio


def _tools_of(request: object) -> set[str]:
    return {t.name for t in request.tools}  # type: ignore[attr-defined]


def test_every_claude_code_name_maps_or_says_why_not() -> None:
    written = ", ".join([*CLAUDE_TOOLS, *UNSUPPORTED])
    spec = SubagentSpec(name="all", description="d", tools=written)
    assert spec.unavailable_tools == list(UNSUPPORTED)
    assert {"bash", "web_fetch", "todo_write", "agent_spawn", "assignTask"} <= set(spec.tools or [])
    assert any("LSP (needs a language server" in w for w in spec.warnings)


def test_rules_and_agent_lists_are_read_from_parentheses() -> None:
    entry = parse_tool_entry(" Bash(git diff:*) ")
    assert (entry.name, entry.argument, entry.natives[0]) == ("Bash", "git diff:*", "bash")
    spec = SubagentSpec(
        name="r", description="d", tools="Read, Bash(git diff:*), Agent(worker, checker)"
    )
    assert spec.tool_rules == ["Bash(git diff:*)"]
    assert spec.allowed_agents == ["worker", "checker"]
    assert SubagentSpec(name="r", description="d", tools="Agent(a), Task").allowed_agents is None
    assert not SubagentSpec(name="r", description="d", tools="Read, Write, Edit").may_spawn
    assert SubagentSpec(name="r", description="d").may_spawn


def test_hook_views_use_claude_code_fields() -> None:
    assert claude_name_of("write_file") == "Write"
    assert claude_name_of("agent_spawn") == "Agent"
    assert to_claude_input("write_file", {"path": "a.py", "content": "x"}) == {
        "file_path": "a.py",
        "content": "x",
    }
    assert from_claude_input("write_file", {"file_path": "b.py", "content": "y"}) == {
        "path": "b.py",
        "content": "y",
    }
    assert claude_name_of("my_tool") is None and to_claude_input("my_tool", {"a": 1}) == {"a": 1}


def _lead(specs: list[SubagentSpec], script: list[object], tmp_path: Path) -> HarnessAgent:
    model = ScriptedModel(script)  # type: ignore[arg-type]
    return HarnessAgent(
        "lead",
        model,
        "You delegate.",
        specs=specs,
        store=InMemoryStore(),
        workspace=tmp_path,
        workspace_scope="shared",
        max_depth=3,
    )


async def test_tools_list_is_an_allowlist_for_spawning(tmp_path: Path) -> None:
    editor = SubagentSpec(name="editor", description="edits", tools="Read, Write, Edit")
    delegator = SubagentSpec(name="delegator", description="delegates", tools="Read, Agent(editor)")
    lead = _lead(
        [editor, delegator],
        [
            ScriptedModel.tool_call("agent_spawn", {"agent": "editor", "task": "t1"}),
            "editor done",
            ScriptedModel.tool_call("agent_spawn", {"agent": "delegator", "task": "t2"}),
            ScriptedModel.tool_call("agent_spawn", {"agent": "delegator", "task": "nested"}),
            ScriptedModel.tool_call("agent_spawn", {"agent": "editor", "task": "nested"}),
            "nested editor done",
            "delegator done",
            "all done",
        ],
        tmp_path,
    )
    async with lead:
        reply = await lead.call("go", RuntimeContext(session_id="s", user_id="u"))
    assert reply.get_text_content() == "all done"
    requests = lead.model.requests  # type: ignore[attr-defined]
    editor_tools = _tools_of(requests[1])
    assert editor_tools == {"read_file", "write_file", "edit_file", "multi_edit"}  # no agent_*
    delegator_tools = _tools_of(requests[3])
    assert "agent_spawn" in delegator_tools and "write_file" not in delegator_tools
    # Agent(editor): spawning the delegator itself is refused, spawning the editor works
    refused = requests[4].messages[-1]
    assert "delegator" in str(refused.content) and "editor" in str(refused.content)
    assert any(getattr(b, "is_error", False) for b in refused.content if not isinstance(b, str))


async def test_multi_edit_is_all_or_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\ntwo\nthree\n")
    lead = _lead(
        [],
        [
            ScriptedModel.tool_call(
                "multi_edit",
                {
                    "path": "a.py",
                    "edits": [
                        {"old_string": "one", "new_string": "1"},
                        {"old_string": "missing", "new_string": "x"},
                    ],
                },
            ),
            ScriptedModel.tool_call(
                "MultiEdit",
                {
                    "path": "a.py",
                    "edits": [
                        {"old_string": "one", "new_string": "1"},
                        {"old_string": "1\ntwo", "new_string": "1\n2"},
                    ],
                },
            ),
            "done",
        ],
        tmp_path,
    )
    ctx = RuntimeContext(session_id="s", user_id="u")
    async with lead:
        await lead.call("edit", ctx)
    requests = lead.model.requests  # type: ignore[attr-defined]
    failed = str(requests[1].messages[-1].content)
    assert "edit 2 of 2" in failed and "no edit was applied" in failed
    assert (tmp_path / "a.py").read_text() == "1\n2\nthree\n"


async def test_a_claude_code_project_agent_works_on_the_project(tmp_path: Path) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "finder.md").write_text(
        "---\nname: finder\ndescription: Finds code.\ntools: Grep\n---\nFind things.\n"
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("needle = 1\n")
    elsewhere = tmp_path / "defs"
    elsewhere.mkdir()
    (elsewhere / "other.md").write_text("---\nname: other\ndescription: Elsewhere.\n---\nHi.\n")
    finder = SubagentSpec.from_file(agents / "finder.md")
    assert finder.workspace.mode.value == "shared"  # no workspace: key, a Claude Code project
    assert SubagentSpec.from_file(elsewhere / "other.md").workspace.mode.value == "isolated"
    lead = _lead(
        [finder],
        [
            ScriptedModel.tool_call("agent_spawn", {"agent": "finder", "task": "find needle"}),
            ScriptedModel.tool_call("grep_files", {"pattern": "needle"}),
            "found it",
            "done",
        ],
        tmp_path,
    )
    async with lead:
        await lead.call("go", RuntimeContext(session_id="s", user_id="u"))
    grep_result = str(lead.model.requests[2].messages[-1].content)  # type: ignore[attr-defined]
    assert "src/app.py:1" in grep_result
