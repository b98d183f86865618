"""A parent in plan mode may delegate research: ``agent_spawn`` runs when the child will itself
run in plan mode (read-only, as Claude Code's plan mode uses its read-only Explore / Plan
subagents), and is refused with a tool error naming the child's mode otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel, SubagentSpec
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.store import InMemoryStore
from agentscope_teams.tools import PermissionEngine

pytestmark = pytest.mark.anyio

CTX = RuntimeContext(session_id="s", user_id="u")


@pytest.fixture(autouse=True)
def private_trust_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "user-config"
    monkeypatch.setenv("AGENTSCOPE_TEAMS_CONFIG_DIR", str(folder))
    return folder


def _results(requests: list[ModelRequest]) -> list[ToolResultBlock]:
    blocks = [b for r in requests for m in r.messages for b in m.content if not isinstance(b, str)]
    found = {b.tool_use_id: b for b in blocks if isinstance(b, ToolResultBlock)}
    return list(found.values())


async def _plan_parent_spawns(tmp_path: Path, **spec_fields: object) -> tuple[HarnessAgent, Path]:
    """A lead in plan mode spawns ``researcher``, which reads a file and tries to write one."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the secret is 42")
    spec = SubagentSpec(
        name="researcher",
        description="Reads.",
        system_prompt="Go.",
        workspace={"mode": "shared"},
        **spec_fields,  # type: ignore[arg-type]
    )
    script = [
        ScriptedModel.tool_call("agent_spawn", {"agent": "researcher", "task": "find it"}),
        ScriptedModel.tool_call("read_file", {"path": "notes.txt"}),
        ScriptedModel.tool_call("write_file", {"path": "out.txt", "content": "x"}),
        "it is 42",
        "done",
    ]
    lead = HarnessAgent(
        "lead",
        ScriptedModel(script),
        "Lead.",
        specs=[spec],
        store=InMemoryStore(),
        workspace=ws,
        workspace_scope="shared",
        permissions=PermissionEngine(mode="plan"),
    )
    async with lead:
        await lead.call("go", CTX)
    return lead, ws


async def test_a_plan_mode_parent_delegates_to_a_read_only_child(tmp_path: Path) -> None:
    lead, ws = await _plan_parent_spawns(tmp_path)
    results = _results(lead.model.requests)
    spawned = [r for r in results if r.name == "agent_spawn"]
    assert spawned and not spawned[-1].is_error, spawned
    assert "it is 42" in spawned[-1].output
    assert any("the secret is 42" in r.output for r in results if r.name == "read_file")
    assert not (ws / "out.txt").exists()  # the child ran in plan mode: its write was refused


async def test_a_plan_mode_parent_may_not_spawn_a_child_that_would_write(tmp_path: Path) -> None:
    lead, ws = await _plan_parent_spawns(tmp_path, permissionMode="acceptEdits")
    [spawned] = [r for r in _results(lead.model.requests) if r.name == "agent_spawn"]
    assert spawned.is_error
    assert "plan mode" in spawned.output and "acceptEdits" in spawned.output
    assert not (ws / "out.txt").exists()


async def test_a_plan_mode_parent_may_not_spawn_a_worktree_child(tmp_path: Path) -> None:
    lead, ws = await _plan_parent_spawns(tmp_path, isolation="worktree")
    [spawned] = [r for r in _results(lead.model.requests) if r.name == "agent_spawn"]
    assert spawned.is_error
    assert "plan mode" in spawned.output and "worktree" in spawned.output
    assert not (ws / ".worktree").exists()
