"""A skill whose ``name:`` differs from its folder (``skills/release-notes/SKILL.md`` saying
``name: Release Notes``, as several published plugins do) is found by either: the ``skill`` tool and
a spec's ``skills:`` accept the folder's name, which is how Claude Code's users invoke it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.events import ToolResultEvent
from agentscope_teams.store import InMemoryStore

pytestmark = pytest.mark.anyio

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")


def _project(root: Path) -> Path:
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "writer.md").write_text(
        "---\nname: writer\ndescription: Writes notes.\nskills: release-notes\n"
        "tools: Read\n---\nWrite the notes.\n"
    )
    skill = root / ".claude" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: Release Notes\ndescription: How we write release notes.\n---\n"
        "Group the changes by kind.\n"
    )
    return agents


async def test_the_skill_tool_finds_a_skill_by_its_folder_name(tmp_path: Path) -> None:
    agents = _project(tmp_path)
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("skill", {"skill": "release-notes"}),
            ScriptedModel.tool_call("skill", {"skill": "Release Notes"}),
            "done",
        ]
    )
    lead = HarnessAgent(
        "lead", model, "Lead.", specs=agents, store=InMemoryStore(), workspace=tmp_path / "ws"
    )
    async with lead:
        events = [e async for e in lead.stream("notes", CTX)]
    results = [e.result for e in events if isinstance(e, ToolResultEvent)]
    assert [r.is_error for r in results] == [False, False]
    assert all("Group the changes by kind." in r.output for r in results)


async def test_a_spec_preloads_a_skill_named_by_its_folder(tmp_path: Path) -> None:
    agents = _project(tmp_path)
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("agent_spawn", {"agent": "writer", "task": "notes"}),
            "notes written",
            "done",
        ]
    )
    lead = HarnessAgent(
        "lead", model, "Lead.", specs=agents, store=InMemoryStore(), workspace=tmp_path / "ws"
    )
    async with lead:
        await lead.call("go", CTX)
    assert "Group the changes by kind." in model.requests[1].system_prompt
