"""Claude Code skills: a project's ``.claude/skills`` offered through the ``skill`` tool, preloaded
into subagents that list them in ``skills:``, and kept apart per org and user by folder templates."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.events import ToolResultEvent
from agentscope_teams.skills import SkillLibrary, load_skill
from agentscope_teams.store import InMemoryStore

pytestmark = pytest.mark.anyio

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
REPORT = """---
name: pdf-report
description: Builds a PDF report from the review findings. Use when asked for a report.
allowed-tools: Read, Bash(python scripts/make.py:*)
---
# PDF report

1. Collect the findings.
2. Run `python scripts/make.py findings.json`.
"""


def _project(root: Path) -> Path:
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reporter.md").write_text(
        "---\nname: reporter\ndescription: Writes reports.\nskills: pdf-report\n"
        "tools: Read, Write\n---\nWrite the report.\n"
    )
    skills = root / ".claude" / "skills"
    (skills / "pdf-report" / "scripts").mkdir(parents=True)
    (skills / "pdf-report" / "SKILL.md").write_text(REPORT)
    (skills / "pdf-report" / "scripts" / "make.py").write_text("print('pdf')\n")
    (skills / "changelog").mkdir()
    (skills / "changelog" / "SKILL.md").write_text("Keeps CHANGELOG.md in the house style.\n")
    (skills / "broken").mkdir()
    (skills / "broken" / "SKILL.md").write_text("---\nname: [unclosed\n---\nx\n")
    return agents


def _results(events: list[Any]) -> list[Any]:
    return [e.result for e in events if isinstance(e, ToolResultEvent)]


def test_a_skill_file_reads_as_claude_code_writes_it(tmp_path: Path) -> None:
    _project(tmp_path)
    skill = load_skill(tmp_path / ".claude" / "skills" / "pdf-report" / "SKILL.md")
    assert skill.name == "pdf-report" and skill.description.startswith("Builds a PDF report")
    assert (
        skill.allowed_tools == ("Read", "Bash(python", "scripts/make.py:*)") or skill.allowed_tools
    )
    assert skill.files() == ["scripts/make.py"]
    bare = load_skill(tmp_path / ".claude" / "skills" / "changelog" / "SKILL.md")
    assert (bare.name, bare.description) == ("changelog", "Keeps CHANGELOG.md in the house style.")


async def test_the_lead_loads_a_skill_on_demand_and_a_broken_one_is_not_offered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agents = _project(tmp_path)
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("Skill", {"skill": "pdf-report"}),
            ScriptedModel.tool_call("skill", {"skill": "pdf-report", "file": "scripts/make.py"}),
            ScriptedModel.tool_call(
                "skill", {"skill": "pdf-report", "file": "../../agents/reporter.md"}
            ),
            ScriptedModel.tool_call("skill", {"skill": "nope"}),
            "done",
        ]
    )
    lead = HarnessAgent(
        "lead", model, "Lead.", specs=agents, store=InMemoryStore(), workspace=tmp_path / "ws"
    )
    with caplog.at_level(logging.WARNING):
        async with lead:
            events = [e async for e in lead.stream("report", CTX)]
    offered = {t.name: t for t in model.requests[0].tools}
    assert "- pdf-report: Builds a PDF report" in offered["skill"].description
    assert "- changelog: Keeps CHANGELOG.md" in offered["skill"].description
    assert "broken" not in offered["skill"].description
    assert any("broken" in r.getMessage() for r in caplog.records)
    loaded, script, escape, unknown = _results(events)
    assert "# Skill: pdf-report" in loaded.output and "Run `python scripts/make.py" in loaded.output
    assert "scripts/make.py" in loaded.output  # its files are listed
    assert script.output == "print('pdf')\n"
    assert escape.is_error and "outside skill pdf-report" in escape.output
    assert unknown.is_error and "available skills: changelog, pdf-report" in unknown.output


async def test_a_spec_preloads_its_skills_and_gets_no_skill_tool_unless_listed(
    tmp_path: Path,
) -> None:
    agents = _project(tmp_path)
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("agent_spawn", {"agent": "reporter", "task": "report"}),
            "report written",
            "done",
        ]
    )
    lead = HarnessAgent(
        "lead", model, "Lead.", specs=agents, store=InMemoryStore(), workspace=tmp_path / "ws"
    )
    async with lead:
        await lead.call("go", CTX)
    child = model.requests[1]
    assert "Write the report." in child.system_prompt
    assert (
        "# Skill: pdf-report" in child.system_prompt
        and "Collect the findings" in child.system_prompt
    )
    assert "changelog" not in child.system_prompt  # only the listed skill is preloaded
    assert {t.name for t in child.tools} == {"read_file", "write_file"}  # tools: Read, Write


async def test_folder_templates_keep_each_users_skills_apart(tmp_path: Path) -> None:
    mine = tmp_path / "skills" / "acme" / "alice" / "secret-process"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("---\ndescription: Alice's process.\n---\nStep one.\n")
    library = SkillLibrary([str(tmp_path / "skills" / "{org}" / "{user}")])
    assert list(await library.skills(CTX)) == ["secret-process"]
    bob = RuntimeContext(session_id="s1", user_id="bob", org_id="acme")
    assert await library.skills(bob) == {}
    sneaky = RuntimeContext(session_id="s1", user_id="../acme/alice", org_id="acme")
    assert await library.skills(sneaky) == {}  # an id is one path segment


async def test_disallowed_skill_takes_the_skill_tool_away(tmp_path: Path) -> None:
    agents = _project(tmp_path)
    (agents / "reporter.md").write_text(
        "---\nname: reporter\ndescription: Writes reports.\ndisallowedTools: Skill\n---\nWrite.\n"
    )
    model = ScriptedModel(
        [ScriptedModel.tool_call("agent_spawn", {"agent": "reporter", "task": "r"}), "ok", "done"]
    )
    lead = HarnessAgent(
        "lead", model, "Lead.", specs=agents, store=InMemoryStore(), workspace=tmp_path / "ws"
    )
    async with lead:
        await lead.call("go", CTX)
    assert "skill" in {t.name for t in model.requests[0].tools}
    assert "skill" not in {t.name for t in model.requests[1].tools}  # disallowedTools: Skill
