"""A parent's permission mode and a spec's ``permissionMode``, as Claude Code documents them: a
parent in ``bypassPermissions`` or ``acceptEdits`` takes precedence over the spec's mode, so its
child is never asked about what the user turned prompts off for. Where we do better: a spec's
``plan`` or ``dontAsk`` (modes that never ask, only refuse) still applies under such a parent.
The rules live in one place, :func:`agentscope_teams.tools.modes.child_mode`."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel, SubagentSpec
from agentscope_teams.events import (
    ConfirmResult,
    RequireUserConfirmEvent,
    UserConfirmResultEvent,
)
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.store import InMemoryStore
from agentscope_teams.subagents.spawn import spec_permissions
from agentscope_teams.teams.member.builder import member_engine
from agentscope_teams.teams.rules.models import Member
from agentscope_teams.tools import PermissionEngine
from agentscope_teams.trust import ProjectTrust

pytestmark = pytest.mark.anyio

CTX = RuntimeContext(session_id="s", user_id="u")


@pytest.fixture(autouse=True)
def private_trust_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "user-config"
    monkeypatch.setenv("AGENTSCOPE_TEAMS_CONFIG_DIR", str(folder))
    return folder


def _file_spec(tmp_path: Path, mode: str) -> SubagentSpec:
    agents = tmp_path / "clone" / ".claude" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    path = agents / "worker.md"
    path.write_text(
        f"---\nname: worker\ndescription: Does it.\npermissionMode: {mode}\n"
        "workspace: shared\n---\nGo.\n"
    )
    return SubagentSpec.from_file(path)


# parent mode, spec mode, the child's mode in an untrusted project, in a trusted one
MATRIX = [
    ("bypass", "plan", "plan", "plan"),  # never asks: applies (Claude Code: bypass)
    ("bypass", "dontAsk", "dont_ask", "dont_ask"),  # likewise
    ("bypass", "default", "bypass", "bypass"),  # the parent takes precedence
    ("bypass", "acceptEdits", "bypass", "bypass"),
    ("accept_edits", "default", "accept_edits", "accept_edits"),  # the parent takes precedence
    ("accept_edits", "plan", "plan", "plan"),
    ("accept_edits", "bypassPermissions", "accept_edits", "bypass"),  # a raise needs trust
    ("plan", "acceptEdits", "plan", "accept_edits"),  # plan does not take precedence
    ("plan", "default", "plan", "default"),
    ("default", "acceptEdits", "default", "accept_edits"),
    ("default", "plan", "plan", "plan"),
    ("dont_ask", "default", "dont_ask", "default"),
]


@pytest.mark.parametrize(("parent", "spec_mode", "untrusted", "trusted"), MATRIX)
def test_the_childs_mode_by_parent_mode_and_trust(
    tmp_path: Path, parent: str, spec_mode: str, untrusted: str, trusted: str
) -> None:
    spec = _file_spec(tmp_path, spec_mode)
    engine = PermissionEngine(mode=parent)  # type: ignore[arg-type]
    got = spec_permissions(spec, engine, ProjectTrust())
    assert got is not None and got.mode == untrusted
    got = spec_permissions(spec, engine, ProjectTrust(trusted=[tmp_path / "clone"]))
    assert got is not None and got.mode == trusted
    # a team member of the spec gets the same mode from a lead in that mode
    member = member_engine(spec, engine, Member(name="m", spec="worker"), ProjectTrust())
    assert member.mode == untrusted


def test_a_lead_choosing_a_mode_at_spawn_is_not_overridden(tmp_path: Path) -> None:
    """Precedence is over a spec's mode: the parent's own choice for a member applies."""
    spec = _file_spec(tmp_path, "default")
    lead = PermissionEngine(mode="bypass")
    chosen = Member(name="m", spec="worker", permission_mode="plan")
    assert member_engine(spec, lead, chosen, ProjectTrust()).mode == "plan"


def _results(requests: list[ModelRequest]) -> str:
    blocks = [b for r in requests for m in r.messages for b in m.content if not isinstance(b, str)]
    return "\n".join(b.output for b in blocks if isinstance(b, ToolResultBlock))


async def _spawn_writer(tmp_path: Path, parent: str, spec_mode: str) -> tuple[str, bool]:
    """A lead in ``parent`` mode spawns a child (a spec in code) that writes a file: what the
    models read, and whether the file was written."""
    spec = SubagentSpec(
        name="worker",
        description="Writes.",
        system_prompt="Go.",
        permissionMode=spec_mode,
        workspace={"mode": "shared"},
    )
    script = [
        ScriptedModel.tool_call("agent_spawn", {"agent": "worker", "task": "write"}),
        ScriptedModel.tool_call("write_file", {"path": "out.txt", "content": "x"}),
        "finished",
        "done",
    ]
    lead = HarnessAgent(
        "lead",
        ScriptedModel(script),
        "Lead.",
        specs=[spec],
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
        workspace_scope="shared",
        permissions=PermissionEngine(mode=parent),  # type: ignore[arg-type]
    )
    async with lead:
        await lead.call("go", CTX)
    return _results(lead.model.requests), (tmp_path / "ws" / "out.txt").exists()


async def test_a_plan_spec_under_a_bypass_parent_stays_read_only(tmp_path: Path) -> None:
    out, written = await _spawn_writer(tmp_path, "bypass", "plan")
    assert not written and "plan mode" in out


async def test_a_child_inherits_the_mode_the_parent_session_is_in(tmp_path: Path) -> None:
    """An agent configured for plan mode whose plan the user approved works in default mode
    (the session's choice); the subagent it then delegates to inherits that mode, not the
    configured ``plan``, so it can do the approved work (Claude Code: a subagent inherits the
    permission context of the main conversation)."""
    spec = SubagentSpec(
        name="worker", description="Writes.", system_prompt="Go.", workspace={"mode": "shared"}
    )
    script = [
        ScriptedModel.tool_call("ExitPlanMode", {"plan": "1. have the worker write out.txt"}),
        ScriptedModel.tool_call("agent_spawn", {"agent": "worker", "task": "write"}),
        ScriptedModel.tool_call("write_file", {"path": "out.txt", "content": "x"}),
        "finished",
        "done",
    ]
    lead = HarnessAgent(
        "lead",
        ScriptedModel(script),
        "Lead.",
        specs=[spec],
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
        workspace_scope="shared",
        permissions=PermissionEngine(mode="plan"),
    )
    async with lead:
        events = [e async for e in lead.stream("go", CTX)]
        [ask] = [e for e in events if isinstance(e, RequireUserConfirmEvent)]
        approve = UserConfirmResultEvent(
            reply_id=ask.reply_id,
            results=[ConfirmResult(tool_call_id=ask.tool_calls[0].id, confirmed=True)],
        )
        await lead.call(approve, CTX)
    out = _results(lead.model.requests)
    assert (tmp_path / "ws" / "out.txt").exists(), out
