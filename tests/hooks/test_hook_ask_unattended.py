"""A PreToolUse hook answering ``ask`` where nobody can answer: a team member's call is refused
as an ``ask`` rule's is (a tool error naming the hook and its reason, listed for the lead), and
the member goes on; an agent that can ask still asks."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.events import RequireUserConfirmEvent
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, MemberBuilder, TaskStatus, TeamRef, TeamRuntime
from agentscope_teams.teams.member.builder import load_pool, member_session_id
from agentscope_teams.tools import PermissionEngine, Toolkit
from agentscope_teams.tools.filesystem import filesystem_tools

from ..backends import unique_namespace
from ..teams.helpers import eventually
from . import members
from .helpers import CTX, agent, command_hooks, script

REASON = "writes need a reviewer"
SPEC = "---\nname: coder\ndescription: Writes files.\nworkspace:\n  mode: shared\n---\nWrite.\n"


def _asking_hook(tmp_path: Path) -> dict:
    out = {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": REASON}}
    command = script(tmp_path, "ask.py", f"print({json.dumps(json.dumps(out))})\n", python=True)
    return command_hooks("PreToolUse", command, "Write")


def _results(model: ScriptedModel, tool: str) -> list[ToolResultBlock]:
    """The results of ``tool`` the model read, once each (each request repeats the history)."""
    seen = {
        r.tool_use_id: r
        for req in model.requests
        for m in req.messages
        for r in m.tool_results()
        if r.name == tool
    }
    return list(seen.values())


@pytest.mark.parametrize("mode", ["default", "acceptEdits"])
async def test_a_member_s_hook_ask_is_refused_and_the_member_goes_on(
    tmp_path: Path, mode: str
) -> None:
    from agentscope_teams.hooks import Hooks, parse_hooks

    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "coder.md").write_text(SPEC)
    ws = tmp_path / "ws"
    ws.mkdir()
    store = InMemoryStore()
    ctx = RuntimeContext(session_id="s", user_id="alice", org_id=unique_namespace())
    client = LocalTeamClient(store, ctx)
    model = ScriptedModel(members.coder)  # claims, writes out.txt, completes its task
    builder = MemberBuilder(
        store=store,
        specs=load_pool(specs),
        client_factory=LocalTeamClient,
        workspace=ws,
        root=tmp_path,
        model=model,
        toolkit=Toolkit(filesystem_tools()),
        hooks=Hooks(parse_hooks(_asking_hook(tmp_path))),
    )
    runtime = TeamRuntime(store, lease_ttl=5.0, poll=0.05)
    try:
        team = await client.create_team("t")
        session = member_session_id(team.id, "c")
        await client.spawn_member(team.id, "c", "coder", session, permission_mode=mode)
        task = await client.assign_task(team.id, "write out.txt", assignee="c")
        runtime.watch(TeamRef(ctx, team.id, builder))

        async def done() -> bool:
            return (await client.get_task(team.id, task.id)).status is TaskStatus.COMPLETED

        with anyio.fail_after(30):  # a liveness guard: nothing waits for an approval
            await eventually(done)
        (result,) = _results(model, "write_file")
        assert result.is_error, result.output
        assert "no one can approve write_file" in result.output
        assert f"a PreToolUse hook asks: {REASON}" in result.output
        assert not (ws / "out.txt").exists()
        member = (await client.get_team(team.id)).member("c")
        assert member is not None and member.permission_prompt is not None
        assert member.permission_prompt.tool == "write_file"  # the lead sees it, as for a rule
        built, _ = builder.build(ctx, await client.get_team(team.id), member)
        state = await built.get_agent_state(ctx.model_copy(update={"session_id": session}))
        assert state.awaiting_confirmation == []
    finally:
        await runtime.aclose()


async def test_the_same_hook_on_an_agent_that_can_ask_still_asks(tmp_path: Path) -> None:
    model = ScriptedModel(
        [ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"}), "done"]
    )
    hooks = _asking_hook(tmp_path)
    async with agent(tmp_path, model, permissions=PermissionEngine(), hooks=hooks) as a:
        events = [ev async for ev in a.stream("go", CTX)]
        state = await a.get_agent_state(CTX)
    [asked] = [e for e in events if isinstance(e, RequireUserConfirmEvent)]
    assert [c.name for c in asked.tool_calls] == ["write_file"]
    assert state.awaiting_confirmation == [asked.tool_calls[0].id]
    assert not (tmp_path / "ws" / "a.txt").exists()
