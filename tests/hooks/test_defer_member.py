"""A team member whose PreToolUse hook defers a call: nobody attends a member's reply, so the lead
is told which call waits; the next wake-up (a message to the member) runs the hook again, and the
member goes on with what it decides."""

from __future__ import annotations

from pathlib import Path

import anyio

from agentscope_teams.context import RuntimeContext
from agentscope_teams.hooks import Hooks, parse_hooks
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, MemberBuilder, TeamRef, TeamRuntime
from agentscope_teams.teams.member.builder import load_pool, member_session_id
from agentscope_teams.tools import Toolkit
from agentscope_teams.tools.filesystem import filesystem_tools

from ..teams.helpers import eventually
from .helpers import script
from .members import coder

SPEC = "---\nname: coder\ndescription: Codes.\nworkspace:\n  mode: shared\n---\nYou code.\n"
HOOK = """\
import json, pathlib, sys
d = json.load(sys.stdin)
if d["tool_name"] == "Write":
    decision = (pathlib.Path(__file__).parent / "decision").read_text().strip()
    print(json.dumps({"hookSpecificOutput": {"permissionDecision": decision}}))
"""


async def test_a_members_deferred_call_is_told_to_the_lead_and_a_wake_up_resumes_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "coder.md").write_text(SPEC)
    (tmp_path / "decision").write_text("defer")
    ws = tmp_path / "ws"
    ws.mkdir()
    command = script(tmp_path, "decide.py", HOOK, python=True)
    config = {"PreToolUse": [{"hooks": [{"type": "command", "command": command}]}]}
    store = InMemoryStore()
    ctx = RuntimeContext(session_id="lead-s", user_id="alice")
    client = LocalTeamClient(store, ctx)
    builder = MemberBuilder(
        store=store,
        specs=load_pool(tmp_path / "specs"),
        client_factory=LocalTeamClient,
        workspace=ws,
        root=tmp_path,
        model=ScriptedModel(coder),
        toolkit=Toolkit(filesystem_tools()),
        hooks=Hooks(parse_hooks(config), project_dir=tmp_path),
    )
    runtime = TeamRuntime(store, lease_ttl=5.0, poll=0.05)
    try:
        team = await client.create_team("t")
        session = member_session_id(team.id, "c")
        await client.spawn_member(team.id, "c", "coder", session, permission_mode="acceptEdits")
        await client.assign_task(team.id, "write out.txt", assignee="c")
        runtime.watch(TeamRef(ctx, team.id, builder))

        async def told() -> bool:
            inbox = await client.read_messages(team.id, "lead")
            return any("deferred" in m.content and "write_file" in m.content for m in inbox)

        with anyio.fail_after(30):  # a liveness guard, not a timing threshold
            await eventually(told, within=25)
        assert not (ws / "out.txt").exists()

        (tmp_path / "decision").write_text("allow")
        await client.send_message(team.id, "lead", "c", "go on")

        async def done() -> bool:
            tasks = await client.list_tasks(team.id)
            return [t.status.value for t in tasks] == ["completed"]

        with anyio.fail_after(30):
            await eventually(done, within=25)
    finally:
        await runtime.aclose()
    assert (ws / "out.txt").read_text() == "written"
