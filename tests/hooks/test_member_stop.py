"""``continue: false`` from a TaskCreated, TaskCompleted or TeammateIdle hook stops the teammate
(Claude Code: "stops the teammate entirely"): the member's record says ``stopped`` with the
``stopReason``, the lead is told, and no process wakes it again until the lead spawns it again or
an operator resumes it. What becomes of the task: ``docs/hooks.md`` (Team members)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import TeamError
from agentscope_teams.hooks import Hooks, parse_hooks
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, InMemoryStore, store_from_url
from agentscope_teams.teams import LocalTeamClient, MemberBuilder, TeamRef, TeamRuntime
from agentscope_teams.teams.member.builder import load_pool, member_session_id
from agentscope_teams.teams.member.review import member_notes
from agentscope_teams.teams.results import BoardListing
from agentscope_teams.teams.rules.models import MemberStatus, TaskStatus
from agentscope_teams.tools import Toolkit
from agentscope_teams.tools.filesystem import filesystem_tools

from ..backends import REDIS_URL, unique_namespace
from ..conftest import require_service
from ..teams.helpers import eventually
from .helpers import script
from .test_teammate_idle import SPEC, member

STOP = {"continue": False, "stopReason": "tests are red"}


def hooks_of(tmp_path: Path, answers: dict[str, dict[str, object]]) -> Hooks:
    """Hooks that answer each event of ``answers`` with its JSON."""
    config = {
        event: [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": script(tmp_path, f"{event}.sh", f"echo '{json.dumps(answer)}'"),
                    }
                ]
            }
        ]
        for event, answer in answers.items()
    }
    return Hooks(parse_hooks(config), project_dir=tmp_path)


class Team:
    """A lead's client and a runtime for member ``c`` (spec ``coder``), sharing ``hooks``."""

    def __init__(self, tmp_path: Path, store: BaseStore, ctx: RuntimeContext, hooks: Hooks | None):
        specs = tmp_path / "specs"
        specs.mkdir(exist_ok=True)
        (specs / "coder.md").write_text(SPEC)
        (tmp_path / "ws").mkdir(exist_ok=True)
        self.store, self.ctx = store, ctx
        self.client = LocalTeamClient(store, ctx, hooks=hooks)
        self.model = ScriptedModel(member)
        self.builder = MemberBuilder(
            store=store,
            specs=load_pool(specs),
            client_factory=lambda s, c: LocalTeamClient(s, c, hooks=hooks),
            workspace=tmp_path / "ws",
            root=tmp_path,
            model=self.model,
            toolkit=Toolkit(filesystem_tools()),
            hooks=hooks,
        )
        self.runtime = TeamRuntime(store, lease_ttl=5.0, poll=0.05)

    async def start(self) -> str:
        team = await self.client.create_team("t")
        await self.client.spawn_member(team.id, "c", "coder", member_session_id(team.id, "c"))
        return team.id

    def watch(self, team_id: str) -> None:
        self.runtime.watch(TeamRef(self.ctx, team_id, self.builder))

    async def stopped(self, team_id: str) -> bool:
        found = (await self.client.get_team(team_id)).member("c")
        return found is not None and found.stop is not None

    async def told(self, team_id: str) -> list[str]:
        return [m.content for m in await self.client.read_messages(team_id, "lead")]

    async def steps(self, n: int) -> None:
        """Let the runtime look at the team ``n`` more times (no clock involved)."""
        target = self.runtime.steps + n
        self.runtime.nudge()
        await eventually(lambda: _reached(self.runtime, target))


async def _reached(runtime: TeamRuntime, target: int) -> bool:
    runtime.nudge()
    return runtime.steps >= target


def claims(model: ScriptedModel) -> list[str]:
    return [
        r.output
        for req in model.requests
        for m in req.messages
        for r in m.tool_results()
        if r.name == "claimTask"
    ]


async def test_task_completed_continue_false_refuses_the_completion_and_stops_the_member(
    tmp_path: Path,
) -> None:
    """A gate that says no never lets the work through (Claude Code would count it): the task
    goes back to pending and ``c`` stops, so it claims neither that task nor the next."""
    ctx = RuntimeContext(session_id="lead-s", user_id="alice")
    team = Team(tmp_path, InMemoryStore(), ctx, hooks_of(tmp_path, {"TaskCompleted": STOP}))
    tid = await team.start()
    first = await team.client.assign_task(tid, "first", assignee="c")
    second = await team.client.assign_task(tid, "second", assignee="c")
    try:
        team.watch(tid)
        with anyio.fail_after(30):
            await eventually(lambda: team.stopped(tid))
            await team.steps(3)
    finally:
        await team.runtime.aclose()
    back = await team.client.get_task(tid, first.id)
    assert back.status is TaskStatus.PENDING and back.owner is None
    assert (await team.client.get_task(tid, second.id)).status is TaskStatus.PENDING
    c = (await team.client.get_team(tid)).member("c")
    assert c is not None and c.status is MemberStatus.STOPPED and c.stop is not None
    assert (c.stop.reason, c.stop.event) == ("tests are red", "TaskCompleted")
    told = await team.told(tid)  # the stop, then what the member answered last
    assert told[0].startswith("c stopped: tests are red") and "spawnMember" in told[0]
    assert not any(second.id in out and "Claimed" in out for out in claims(team.model))


async def test_a_completion_blocked_with_continue_false_goes_back_to_the_board(
    tmp_path: Path,
) -> None:
    """Blocked and stopped at once: the completion is refused (the block) and the member stops
    (``continue: false``), so the task it held goes back to pending for another member."""
    answer = {"decision": "block", "reason": "no tests", **STOP}
    ctx = RuntimeContext(session_id="lead-s", user_id="alice")
    team = Team(tmp_path, InMemoryStore(), ctx, hooks_of(tmp_path, {"TaskCompleted": answer}))
    tid = await team.start()
    task = await team.client.assign_task(tid, "first")
    try:
        team.watch(tid)
        with anyio.fail_after(30):
            await eventually(lambda: team.stopped(tid))
    finally:
        await team.runtime.aclose()
    back = await team.client.get_task(tid, task.id)
    assert back.status is TaskStatus.PENDING and back.owner is None
    c = (await team.client.get_team(tid)).member("c")
    assert c is not None and c.status is MemberStatus.STOPPED


async def test_task_created_continue_false_stops_the_assignee(tmp_path: Path) -> None:
    ctx = RuntimeContext(session_id="lead-s", user_id="alice")
    team = Team(tmp_path, InMemoryStore(), ctx, hooks_of(tmp_path, {"TaskCreated": STOP}))
    tid = await team.start()
    task = await team.client.assign_task(tid, "first", assignee="c")
    assert (await team.client.get_task(tid, task.id)).status is TaskStatus.PENDING  # created
    c = (await team.client.get_team(tid)).member("c")
    assert c is not None and c.stop is not None and c.stop.event == "TaskCreated"
    assert c.status is MemberStatus.STOPPED
    with pytest.raises(TeamError, match="stopped"):
        await team.client.claim_task(tid, "c", task.id)
    with pytest.raises(TeamError, match="spawnMember"):  # its runtime's writes keep it stopped
        await team.client.set_member_status(tid, "c", MemberStatus.IDLE)


@asynccontextmanager
async def store_of(kind: str) -> AsyncIterator[BaseStore]:
    if kind == "memory":
        yield InMemoryStore()
        return
    require_service("redis")
    async with store_from_url(REDIS_URL) as store:
        yield store


@pytest.mark.parametrize("kind", ["memory", "redis"])
async def test_the_stop_holds_in_the_store_until_the_lead_spawns_the_member_again(
    tmp_path: Path, kind: str
) -> None:
    """A TeammateIdle hook stops ``c`` in one runtime; another runtime (another process: nothing
    shared but the store, no hooks) does not wake it for new work; the lead's spawnMember of the
    same member resumes it, and it does the work."""
    ctx = RuntimeContext(session_id="lead-s", user_id="alice", org_id=unique_namespace())
    async with store_of(kind) as store:
        first = Team(tmp_path, store, ctx, hooks_of(tmp_path, {"TeammateIdle": STOP}))
        tid = await first.start()
        await first.client.assign_task(tid, "first", assignee="c")
        try:
            first.watch(tid)
            with anyio.fail_after(30):
                await eventually(lambda: first.stopped(tid))
        finally:
            await first.runtime.aclose()
        other = Team(tmp_path, store, ctx, None)
        task = await other.client.assign_task(tid, "second", assignee="c")
        try:
            other.watch(tid)
            with anyio.fail_after(30):
                await other.steps(3)
                assert (await other.client.get_task(tid, task.id)).status is TaskStatus.PENDING
                assert other.model.requests == []  # not woken
                await other.client.spawn_member(tid, "c", "coder")  # the lead's way back
                await eventually(lambda: _finished(other.client, tid, task.id), within=25)
        finally:
            await other.runtime.aclose()
        c = (await other.client.get_team(tid)).member("c")
        assert c is not None and c.stop is None
        await other.client.delete_team(tid)


async def _finished(client: LocalTeamClient, team_id: str, task_id: str) -> bool:
    return (await client.get_task(team_id, task_id)).status is TaskStatus.COMPLETED


async def test_an_operator_resumes_a_stopped_member(tmp_path: Path) -> None:
    ctx = RuntimeContext(session_id="lead-s", user_id="alice")
    team = Team(tmp_path, InMemoryStore(), ctx, hooks_of(tmp_path, {"TaskCreated": STOP}))
    tid = await team.start()
    await team.client.assign_task(tid, "first", assignee="c")
    resumed = await team.client.resume_member(tid, "c")
    assert resumed.stop is None and resumed.status is MemberStatus.IDLE


async def test_the_leads_list_tasks_names_the_stopped_member_and_why(tmp_path: Path) -> None:
    ctx = RuntimeContext(session_id="lead-s", user_id="alice")
    team = Team(tmp_path, InMemoryStore(), ctx, hooks_of(tmp_path, {"TaskCreated": STOP}))
    tid = await team.start()
    await team.client.assign_task(tid, "first", assignee="c")
    notes = member_notes(await team.client.get_team(tid))
    listing = BoardListing.of(await team.client.list_tasks(tid), notes).render()
    assert "c stopped: tests are red (a TaskCreated hook answered continue: false" in listing


async def test_continue_false_wins_over_a_teammate_idle_block(tmp_path: Path) -> None:
    """A block beside ``continue: false`` does not send the member back to work (Claude Code:
    ``continue: false`` takes precedence over the decision fields)."""
    answer = {"decision": "block", "reason": "write notes.txt first", **STOP}
    ctx = RuntimeContext(session_id="lead-s", user_id="alice")
    team = Team(tmp_path, InMemoryStore(), ctx, hooks_of(tmp_path, {"TeammateIdle": answer}))
    tid = await team.start()
    await team.client.assign_task(tid, "first", assignee="c")
    try:
        team.watch(tid)
        with anyio.fail_after(30):
            await eventually(lambda: team.stopped(tid))
    finally:
        await team.runtime.aclose()
    prompts = [r.messages[-1].get_text_content() for r in team.model.requests]
    assert "write notes.txt first" not in prompts
    assert not (tmp_path / "ws" / "notes.txt").exists()
