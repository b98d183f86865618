"""``disable-model-invocation: true`` in a SKILL.md: in Claude Code only the user runs that skill
(``/name``); the model is not offered it and subagents do not preload it. Here there is no user
command, so the model is not offered it, a call naming it is a tool error saying why, and a spec's
``skills:`` naming it preloads nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.events import ToolResultEvent
from agentscope_teams.skills import load_skill
from agentscope_teams.store import InMemoryStore

pytestmark = pytest.mark.anyio

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")


def _project(root: Path) -> Path:
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "shipper.md").write_text(
        "---\nname: shipper\ndescription: Ships.\nskills: deploy, style\ntools: Read\n---\nShip.\n"
    )
    skills = root / ".claude" / "skills"
    (skills / "deploy").mkdir(parents=True)
    (skills / "deploy" / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Deploys production.\ndisable-model-invocation: true\n"
        "---\nRun the deploy script.\n"
    )
    (skills / "style").mkdir()
    (skills / "style" / "SKILL.md").write_text(
        "---\nname: style\ndescription: House style.\n---\nWrite short sentences.\n"
    )
    return agents


def test_the_key_is_read(tmp_path: Path) -> None:
    _project(tmp_path)
    skills = tmp_path / ".claude" / "skills"
    assert load_skill(skills / "deploy" / "SKILL.md").model_invocable is False
    assert load_skill(skills / "style" / "SKILL.md").model_invocable is True


async def test_the_model_is_not_offered_a_user_only_skill(tmp_path: Path) -> None:
    agents = _project(tmp_path)
    model = ScriptedModel([ScriptedModel.tool_call("skill", {"skill": "deploy"}), "done"])
    lead = HarnessAgent(
        "lead", model, "Lead.", specs=agents, store=InMemoryStore(), workspace=tmp_path / "ws"
    )
    async with lead:
        events = [e async for e in lead.stream("deploy", CTX)]
    offered = {t.name: t for t in model.requests[0].tools}
    assert "- style:" in offered["skill"].description
    assert "deploy" not in offered["skill"].description
    (result,) = [e.result for e in events if isinstance(e, ToolResultEvent)]
    assert result.is_error and "disable-model-invocation" in result.output
    assert "Run the deploy script" not in result.output


async def test_a_subagent_does_not_preload_it(tmp_path: Path) -> None:
    agents = _project(tmp_path)
    model = ScriptedModel(
        [ScriptedModel.tool_call("agent_spawn", {"agent": "shipper", "task": "ship"}), "ok", "done"]
    )
    lead = HarnessAgent(
        "lead", model, "Lead.", specs=agents, store=InMemoryStore(), workspace=tmp_path / "ws"
    )
    async with lead:
        await lead.call("go", CTX)
    child = model.requests[1].system_prompt
    assert "Write short sentences." in child and "Run the deploy script" not in child
