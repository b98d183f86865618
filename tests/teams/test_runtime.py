"""A lead forms a team from specs/ and its members run as concurrent loops in the lead's process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.agent.lease import Lease
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel, ScriptItem
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import (
    LocalTeamClient,
    MemberBuilder,
    MemberStatus,
    TaskStatus,
    TeamLeadExtension,
    TeamRef,
    TeamRuntime,
    TeamStatus,
    member_session_id,
    wait_for_team,
)
from agentscope_teams.teams.delivery import TEAM_MESSAGE
from agentscope_teams.teams.lead.state import TeamLeadState
from agentscope_teams.teams.member.builder import load_pool

from .helpers import eventually, lead_messages, members_idle, team_id_of
from .scripts import (
    ASK,
    CLAIMED,
    SPECS,
    START,
    SUMMARY,
    SUMMARY_REQUEST,
    lead_script,
    member_script,
    newest_results,
    step_results,
)

pytestmark = pytest.mark.anyio
SPEC_DIR = Path(__file__).resolve().parents[2] / "specs"


@pytest.fixture(params=["memory", "file"])
async def local_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    url = "memory://" if request.param == "memory" else f"file://{tmp_path / 'store'}"
    async with store_from_url(url) as store:
        yield store


def make_lead(
    tmp_path: Path, store: BaseStore, lead_model: ScriptedModel, member_model: ScriptedModel
) -> tuple[HarnessAgent, TeamLeadExtension]:
    ext = TeamLeadExtension(SPEC_DIR, member_model=member_model, poll=0.05, lease_ttl=2.0)
    lead = HarnessAgent(
        "lead", lead_model, workspace=tmp_path / "ws", store=store, extensions=[ext]
    )
    return lead, ext


async def test_team_of_three_completes_six_tasks_and_reports(
    tmp_path: Path, local_store: BaseStore, alice: RuntimeContext
) -> None:
    lead_model, member_model = ScriptedModel(lead_script), ScriptedModel(member_script)
    lead, ext = make_lead(tmp_path, local_store, lead_model, member_model)
    try:
        with anyio.fail_after(60):
            await lead.call(START, alice)
        team_id = team_id_of(await lead.get_agent_state(alice))
        client = LocalTeamClient(local_store, alice)
        waited = [r for m in lead_model.requests for r in newest_results(m)]
        report = next(r.output for r in waited if r.name == "waitForTeam")
        assert report.startswith("All 6 tasks are finished (6 completed)")
        assert "The team ends (completed, its members stopped) when your reply ends" in report
        tasks = await client.list_tasks(team_id)
        assert [t.status for t in tasks] == [TaskStatus.COMPLETED] * 6
        for task, assignee in zip(tasks, ["reviewer", "security", "perf"] * 2, strict=True):
            assert task.owner == assignee and task.result == f"{assignee} finished {task.id}"
            assert f"{task.id} [completed]" in report and task.result in report
        for sender, recipient in [("reviewer", "security"), ("security", "perf")]:
            inbox = await client.read_messages(team_id, recipient)
            assert any(m.sender == sender and "is working on" in m.content for m in inbox)
        # the lead's reply ended with every task done: the team ended with it
        team = await client.get_team(team_id)
        assert team.status is TeamStatus.COMPLETED and team.ended_at is not None
        assert team.created_at <= team.ended_at
        assert {m.status for m in team.members} == {MemberStatus.STOPPED}
        assert ext.runtime is not None and not ext.runtime.refs
        assert {m.session_id for m in team.members} == {
            member_session_id(team_id, n) for n in SPECS
        }
        # the next call starts afresh: the ended team is no longer the current one
        await lead.call("any news?", alice)
        assert TeamLeadState.peek(await lead.get_agent_state(alice)).team_id is None
    finally:
        await ext.aclose()
    team = await client.get_team(team_id)
    assert team.status is TeamStatus.COMPLETED
    assert {m.status for m in team.members} == {MemberStatus.STOPPED}


def open_lead_script(request: ModelRequest) -> ModelResponse | str:
    """START: form the team of three and assign nothing (with no work finished the team stays
    active when the call returns; a task for the lead itself is refused: the lead takes none);
    ASK: broadcast a request for summaries."""
    prompt = next(m for m in reversed(request.messages) if TEAM_MESSAGE not in m.metadata)
    text = prompt.get_text_content()
    if text == ASK:
        return ScriptedModel.tool_call("broadcastMessage", {"content": SUMMARY_REQUEST})
    if text == START:
        steps: list[tuple[str, dict[str, object]]] = [
            ("createTeam", {"name": "review"}),
            *(("spawnMember", {"name": n, "spec": s}) for n, s in SPECS.items()),
        ]
        return ScriptedModel.tool_calls(steps)
    return "noted"


async def test_a_team_without_finished_work_stays_active_and_a_broadcast_wakes_it(
    tmp_path: Path, local_store: BaseStore, alice: RuntimeContext
) -> None:
    lead_model, member_model = ScriptedModel(open_lead_script), ScriptedModel(member_script)
    lead, ext = make_lead(tmp_path, local_store, lead_model, member_model)
    try:
        with anyio.fail_after(60):
            await lead.call(START, alice)
        team_id = team_id_of(await lead.get_agent_state(alice))
        client = LocalTeamClient(local_store, alice)
        team = await client.get_team(team_id)
        assert team.status is TeamStatus.ACTIVE and team.ended_at is None
        # a broadcast wakes every member; their unreported final texts go to the lead
        await lead.call(ASK, alice)
        await eventually(lambda: _summaries(client, team_id), within=30)
        await members_idle(client, team_id)
        await lead.call("any news?", alice)
        messages = lead_model.requests[-1].messages
        seen = "\n".join(m.get_text_content() for m in messages)
        for member in SPECS:
            assert f"Message from {member} (team {team_id}):\n{member}: {SUMMARY}" in seen
        ids = [m.metadata[TEAM_MESSAGE] for m in messages if TEAM_MESSAGE in m.metadata]
        assert len(ids) == len(set(ids)) == len(await lead_messages(client, team_id))
        assert (await client.get_team(team_id)).status is TeamStatus.ACTIVE
    finally:
        await ext.aclose()
    team = await client.get_team(team_id)
    assert team.status is TeamStatus.ACTIVE
    assert {m.status for m in team.members} == {MemberStatus.STOPPED}


async def _summaries(client: LocalTeamClient, team_id: str) -> bool:
    texts = await lead_messages(client, team_id)
    return all((m, f"{m}: {SUMMARY}") in texts for m in SPECS)


async def test_members_stop_when_the_team_is_deleted(
    tmp_path: Path, local_store: BaseStore, alice: RuntimeContext
) -> None:
    member_model = ScriptedModel(member_script)
    script: list[ScriptItem] = [
        ScriptedModel.tool_calls(
            [
                ("createTeam", {"name": "short"}),
                ("spawnMember", {"name": "reviewer", "spec": "reviewer"}),
                ("assignTask", {"title": "one", "assignee": "reviewer"}),
                ("waitForTeam", {"timeout_seconds": 30}),
                ("deleteTeam", {}),
            ]
        ),
        "done",
    ]
    lead, ext = make_lead(tmp_path, local_store, ScriptedModel(script), member_model)
    try:
        await lead.call("go", alice)
        assert ext.runtime is not None and not ext.runtime.slots and not ext.runtime.refs
        assert await LocalTeamClient(local_store, alice).list_teams() == []
        state = await lead.get_agent_state(alice)
        assert TeamLeadState.peek(state).team_id is None
        calls = len(member_model.requests)
        await anyio.sleep(0.3)
        assert len(member_model.requests) == calls
    finally:
        await ext.aclose()


async def test_a_member_leased_elsewhere_is_not_run_here(
    tmp_path: Path, local_store: BaseStore, alice: RuntimeContext
) -> None:
    client = LocalTeamClient(local_store, alice)
    team = await client.create_team("leased")
    await client.spawn_member(team.id, "reviewer", "reviewer", member_session_id(team.id, "x"))
    other = Lease(
        local_store, ("team-member-lease", *alice.owner_scope(), team.id, "reviewer"), 30.0
    )
    assert await other.try_acquire()  # a worker runs this member
    member_model = ScriptedModel(member_script)
    builder = MemberBuilder(
        store=local_store,
        specs=load_pool(SPEC_DIR),
        client_factory=lambda store, ctx: LocalTeamClient(store, ctx),
        workspace=tmp_path,
        root=tmp_path,
        model=member_model,
    )
    runtime = TeamRuntime(local_store, lease_ttl=2.0, poll=0.05)
    runtime.watch(TeamRef(alice, team.id, builder))
    try:
        task = await client.assign_task(team.id, "one", assignee="reviewer")
        await anyio.sleep(0.5)
        assert member_model.requests == []
        assert (await client.get_task(team.id, task.id)).status is TaskStatus.PENDING
        await other.release()  # the worker stopped: this process takes the member
        with anyio.fail_after(20):
            assert (await wait_for_team(client, team.id, 20)).done
        assert (await client.get_task(team.id, task.id)).owner == "reviewer"
    finally:
        await runtime.aclose()
    assert (await client.get_team(team.id)).members[0].status is MemberStatus.STOPPED


def slow_worker_script(request: ModelRequest) -> ModelResponse | str:
    """Claim, look at the board three times (slowly), then complete."""
    results = step_results(request)
    claimed = [CLAIMED.search(r.output) for m in request.messages for r in m.tool_results()]
    task_id = next((c.group(1) for c in claimed if c), None)
    if not results:
        return ScriptedModel.tool_call("claimTask", {})
    if task_id is None:
        return "nothing for me"
    looks = sum(r.name == "listTasks" for m in request.messages for r in m.tool_results())
    if looks < 3:
        return ScriptedModel.tool_call("listTasks", {})
    if results[-1].name == "completeTask":
        return "done"
    return ScriptedModel.tool_call("completeTask", {"task_id": task_id, "result": "slow but sure"})


async def test_task_leases_are_renewed_while_a_member_works(
    tmp_path: Path, local_store: BaseStore, alice: RuntimeContext
) -> None:
    member_model = ScriptedModel(slow_worker_script, delay=0.3)
    ext = TeamLeadExtension(
        SPEC_DIR, member_model=member_model, poll=0.05, lease_ttl=0.6, task_lease=0.5
    )
    script: list[ScriptItem] = [
        ScriptedModel.tool_calls(
            [
                ("createTeam", {"name": "slow"}),
                ("spawnMember", {"name": "a", "spec": "reviewer"}),
                ("spawnMember", {"name": "b", "spec": "reviewer"}),
                ("assignTask", {"title": "long job"}),
                ("waitForTeam", {"timeout_seconds": 30}),
            ]
        ),
        "done",
    ]
    lead = HarnessAgent(
        "lead", ScriptedModel(script), workspace=tmp_path, store=local_store, extensions=[ext]
    )
    try:
        with anyio.fail_after(40):
            await lead.call("go", alice)
        team_id = team_id_of(await lead.get_agent_state(alice))
        (task,) = await LocalTeamClient(local_store, alice).list_tasks(team_id)
        assert (task.status, task.result, task.attempts) == (
            TaskStatus.COMPLETED,
            "slow but sure",
            1,
        )
        assert "lease_expired" not in [e.action for e in task.history]
    finally:
        await ext.aclose()


async def test_the_lead_ends_its_team_with_end_team(
    tmp_path: Path, local_store: BaseStore, alice: RuntimeContext
) -> None:
    script: list[ScriptItem] = [
        ScriptedModel.tool_calls(
            [
                ("createTeam", {"name": "brief"}),
                ("assignTask", {"title": "kept for later"}),  # no member to run it yet
                ("spawnMember", {"name": "reviewer", "spec": "reviewer"}),
                ("endTeam", {}),
                ("assignTask", {"title": "too late"}),
                ("endTeam", {}),
            ]
        ),
        "ended",
    ]
    lead_model = ScriptedModel(script)
    lead, ext = make_lead(tmp_path, local_store, lead_model, ScriptedModel(member_script))
    try:
        await lead.call("go", alice)
        team_id = team_id_of(await lead.get_agent_state(alice))
        team = await LocalTeamClient(local_store, alice).get_team(team_id)
        # ended although a task is open: the lead said so
        assert team.status is TeamStatus.COMPLETED and team.ended_at is not None
        assert {m.status for m in team.members} == {MemberStatus.STOPPED}
        results = [r for r in newest_results(lead_model.requests[-1])]
        ended, late, twice = results[3:]
        assert ended.output.startswith(f"Team {team_id} ended (completed)")
        assert late.is_error and f"team {team_id} has ended (completed)" in late.output
        assert "createTeam" in late.output
        assert twice.output == f"Team {team_id} had already ended (completed); nothing changed."
        tasks = await LocalTeamClient(local_store, alice).list_tasks(team_id)
        assert [t.title for t in tasks] == ["kept for later"]
    finally:
        await ext.aclose()
