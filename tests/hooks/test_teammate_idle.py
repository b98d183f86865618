"""TeammateIdle: fired when a member's turn ended and the board has nothing for it, with Claude
Code's input; exit 2 keeps the member working with stderr as its next prompt, ``continue: false``
stops it and tells the lead; a hook that always blocks is bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from agentscope_teams.context import RuntimeContext
from agentscope_teams.hooks import Hooks, parse_hooks
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, MemberBuilder, TeamRef, TeamRuntime
from agentscope_teams.teams.member.builder import load_pool, member_session_id
from agentscope_teams.teams.member.idle import MAX_IDLE_BLOCKS
from agentscope_teams.tools import Toolkit
from agentscope_teams.tools.filesystem import filesystem_tools

from ..teams.helpers import eventually
from ..teams.scripts import call, step_results
from .helpers import read_lines, script
from .members import CLAIMED

FEEDBACK = "write notes.txt before you stop"
SPEC = "---\nname: coder\ndescription: Codes.\nworkspace:\n  mode: shared\n---\nYou code.\n"


def member(request: ModelRequest) -> ModelResponse | str:
    """Claim and complete every task; write notes.txt when a prompt asks for it."""
    results = step_results(request)
    if not results:
        if "notes.txt" in request.messages[-1].get_text_content():
            return call("write_file", path="notes.txt", content="notes")
        return call("claimTask")
    last = results[-1]
    if last.name == "claimTask" and (found := CLAIMED.search(last.output)):
        return call("completeTask", task_id=found.group(1), result="done")
    if last.name == "completeTask":
        return call("claimTask")
    return "done"


class Team:
    def __init__(self, tmp_path: Path, hook_body: str) -> None:
        (tmp_path / "specs").mkdir()
        (tmp_path / "specs" / "coder.md").write_text(SPEC)
        self.ws, self.log = tmp_path / "ws", tmp_path / "idle.jsonl"
        self.ws.mkdir()
        command = script(tmp_path, "idle.sh", f"cat >> {self.log}; echo >> {self.log}\n{hook_body}")
        config = {"TeammateIdle": [{"hooks": [{"type": "command", "command": command}]}]}
        self.store = InMemoryStore()
        self.ctx = RuntimeContext(session_id="lead-s", user_id="alice")
        self.client = LocalTeamClient(self.store, self.ctx)
        self.model = ScriptedModel(member)
        self.builder = MemberBuilder(
            store=self.store,
            specs=load_pool(tmp_path / "specs"),
            client_factory=LocalTeamClient,
            workspace=self.ws,
            root=tmp_path,
            model=self.model,
            toolkit=Toolkit(filesystem_tools()),
            hooks=Hooks(parse_hooks(config), project_dir=tmp_path),
        )
        self.runtime = TeamRuntime(self.store, lease_ttl=5.0, poll=0.05)

    async def run(self, tasks: int = 1, until: str = "idle") -> str:
        """A team with member ``c`` and ``tasks`` tasks for it; returns once they are done and
        the member is ``until`` (idle, or stopped by the hook)."""
        team = await self.client.create_team("t")
        session = member_session_id(team.id, "c")
        await self.client.spawn_member(
            team.id, "c", "coder", session, permission_mode="acceptEdits"
        )
        for i in range(tasks):
            await self.client.assign_task(team.id, f"task {i}", assignee="c")
        self.runtime.watch(TeamRef(self.ctx, team.id, self.builder))

        async def idle() -> bool:
            found = (await self.client.get_team(team.id)).member("c")
            open_tasks = await self.client.open_board(team.id)
            return (
                bool(read_lines(self.log))
                and found is not None
                and not open_tasks
                and (found.status.value == until)
            )

        with anyio.fail_after(30):  # a liveness guard, not a timing threshold
            await eventually(idle, within=25)
        return team.id

    def fired(self) -> list[dict[str, Any]]:
        return read_lines(self.log)


async def test_teammate_idle_fires_once_the_member_has_nothing_left(tmp_path: Path) -> None:
    team = Team(tmp_path, "exit 0\n")
    try:
        tid = await team.run(tasks=2)
    finally:
        await team.runtime.aclose()
    [event] = team.fired()  # once, after both tasks: never while it had work
    assert event["hook_event_name"] == "TeammateIdle"
    assert (event["teammate_name"], event["team_name"]) == ("c", tid)
    assert event["session_id"] == "lead-s" and event["cwd"] == str(team.ws)
    assert event["permission_mode"] == "acceptEdits"
    assert {t.status.value for t in await team.client.list_tasks(tid)} == {"completed"}


async def test_exit_2_keeps_the_member_working_with_the_feedback(tmp_path: Path) -> None:
    notes = tmp_path / "ws" / "notes.txt"
    body = f'[ -e {notes} ] || {{ echo "{FEEDBACK}" >&2; exit 2; }}\n'
    team = Team(tmp_path, body)
    try:
        await team.run()
    finally:
        await team.runtime.aclose()
    assert notes.read_text() == "notes"  # it worked on instead of going idle
    prompts = [r.messages[-1].get_text_content() for r in team.model.requests]
    assert FEEDBACK in prompts  # the hook's stderr was its next prompt
    assert len(team.fired()) == 2  # blocked once, then let it go idle


async def test_continue_false_stops_the_member_and_tells_the_lead(tmp_path: Path) -> None:
    """Stopped for good (more in test_member_stop): its record says why, the lead is told once."""
    body = 'echo \'{"continue": false, "stopReason": "budget spent"}\'\n'
    team = Team(tmp_path, body)
    try:
        tid = await team.run(until="stopped")
        calls = len(team.model.requests)

        async def told() -> bool:
            inbox = await team.client.read_messages(tid, "lead")
            return any(m.content.startswith("c stopped: budget spent") for m in inbox)

        await eventually(told)
    finally:
        await team.runtime.aclose()
    assert len(team.model.requests) == calls and len(team.fired()) == 1  # no other turn
    found = (await team.client.get_team(tid)).member("c")
    assert found is not None and found.stop is not None
    assert (found.stop.reason, found.stop.event) == ("budget spent", "TeammateIdle")


async def test_a_hook_that_always_blocks_is_bounded(tmp_path: Path) -> None:
    team = Team(tmp_path, 'echo "keep going" >&2; exit 2\n')
    try:
        tid = await team.run()

        async def told() -> bool:
            inbox = await team.client.read_messages(tid, "lead")
            return any("kept it working" in m.content for m in inbox)

        await eventually(told)
    finally:
        await team.runtime.aclose()
    assert len(team.fired()) == MAX_IDLE_BLOCKS + 1
