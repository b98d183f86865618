"""The team tools as a model sees them: identity, tool errors, message injection, unreported replies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import (
    LocalTeamClient,
    Member,
    TaskStatus,
    TeamLeadExtension,
    TeamMemberExtension,
)
from agentscope_teams.teams.delivery import TEAM_MESSAGE

from .helpers import lead_messages, team_id_of

pytestmark = pytest.mark.anyio
SPEC_DIR = Path(__file__).resolve().parents[2] / "specs"


@pytest.fixture
async def store() -> AsyncIterator[BaseStore]:
    """The in-memory store only: these tests are about tools, not backends."""
    async with store_from_url("memory://") as s:
        yield s


def call(tool: str, /, **kw: Any) -> Any:
    return ScriptedModel.tool_call(tool, kw)


def results(model: ScriptedModel) -> list[ToolResultBlock]:
    """The tool result each request answered, in order (one tool call per step)."""
    found = []
    for req in model.requests:
        msgs = [m for m in req.messages if TEAM_MESSAGE not in m.metadata]
        if msgs and msgs[-1].tool_results():
            found.append(msgs[-1].tool_results()[-1])
    return found


async def member_agent(
    tmp_path: Path, client: LocalTeamClient, team_id: str, name: str, script: list[Any]
) -> tuple[HarnessAgent, ScriptedModel]:
    ext = TeamMemberExtension(client.as_member(team_id, name))
    ext.team = await client.get_team(team_id)
    model = ScriptedModel(script)
    agent = HarnessAgent(
        name,
        model,
        workspace=tmp_path / "ws",
        store=client.store,
        builtin_tools=False,
        extensions=[ext],
    )
    return agent, model


async def board(client: LocalTeamClient) -> tuple[str, list[str]]:
    """A team with members a and b; t-1 done by b, t-2 held by b, t-3 blocked by t-2, t-4 free."""
    team = await client.create_team("crew", members=[Member(name="a"), Member(name="b")])
    ids = [(await client.assign_task(team.id, f"task {i}")).id for i in range(1, 3)]
    ids.append((await client.assign_task(team.id, "task 3", blocked_by=[ids[1]])).id)
    ids.append((await client.assign_task(team.id, "task 4")).id)
    await client.claim_task(team.id, "b", ids[0])
    await client.complete_task(team.id, "b", ids[0], "done")
    await client.claim_task(team.id, "b", ids[1])
    return team.id, ids


async def test_member_tools_act_as_the_member_and_report_mistakes(
    tmp_path: Path, store: BaseStore, alice: RuntimeContext
) -> None:
    client = LocalTeamClient(store, alice)
    team_id, (done, held, blocked, free) = await board(client)
    script = [
        call("claimTask", task_id=blocked),
        call("claimTask", task_id=done),
        call("claimTask", task_id=held),
        call("completeTask", task_id=held, result="stolen"),
        call("claimTask", task_id="t-99"),
        call("sendMessage", to="ghost", content="hi"),
        call("claimTask", member="b"),
        call("claimTask"),
        call("completeTask", task_id=free, result="mine"),
        "all done",
    ]
    agent, model = await member_agent(tmp_path, client, team_id, "a", script)
    await agent.call("work", alice.with_session("s-a"))

    got = results(model)
    errors = [(r.is_error, r.output) for r in got[:7]]
    assert all(is_error for is_error, _ in errors), errors
    assert f"waiting for unfinished task(s) '{held}'" in errors[0][1]
    assert "already completed" in errors[1][1]
    assert "already claimed by 'b'" in errors[2][1]
    assert "owned by 'b', not 'a'" in errors[3][1]
    assert "no task 't-99'" in errors[4][1]
    assert "'ghost' is not a member" in errors[5][1]
    assert "member: unexpected argument" in errors[6][1]
    assert not got[7].is_error and got[7].output.startswith(f"Claimed task {free}")
    task = await client.get_task(team_id, free)
    assert (task.owner, task.status, task.result) == ("a", TaskStatus.COMPLETED, "mine")
    assert (await client.get_task(team_id, held)).owner == "b"
    assert await lead_messages(client, team_id) == []  # it reported: no reply forwarded


async def test_unreported_reply_goes_to_the_lead_and_messages_are_injected_once(
    tmp_path: Path, store: BaseStore, alice: RuntimeContext
) -> None:
    client = LocalTeamClient(store, alice)
    team = await client.create_team("crew", members=[Member(name="a"), Member(name="b")])
    await client.send_message(team.id, "b", "a", "please look at x.py")
    script = ["x.py looks fine", "ok", call("listTasks"), "nothing new"]
    agent, model = await member_agent(tmp_path, client, team.id, "a", script)
    ctx = alice.with_session("s-a")
    await agent.call("You have new work", ctx)
    assert "please look at x.py" in model.requests[0].messages[-1].get_text_content()
    assert await lead_messages(client, team.id) == [("a", "x.py looks fine")]
    assert await client.unread(team.id, "a") == []  # acknowledged after the save
    await agent.call("anything else?", ctx)
    injected = [m for m in model.requests[1].messages if TEAM_MESSAGE in m.metadata]
    assert len(injected) == 1  # not injected again
    await agent.clear_context(ctx)  # acknowledged messages stay delivered without the context
    await agent.call("and now?", ctx)
    assert all(TEAM_MESSAGE not in m.metadata for r in model.requests[2:] for m in r.messages)


async def test_lead_tool_errors_are_readable(
    tmp_path: Path, store: BaseStore, alice: RuntimeContext
) -> None:
    script = [
        call("spawnMember", name="r", spec="reviewer"),
        call("createTeam", name="crew"),
        call("spawnMember", name="x", spec="ghost-spec"),
        call("assignTask", title="t", assignee="ghost"),
        call("sendMessage", to="ghost", content="hi"),
        call("assignTask", title="t", blocked_by=["t-99"]),
        call("spawnMember", name="lead", spec="reviewer"),
        call("waitForTeam", timeout_seconds=1, team_id="team-nope"),
        call("listTasks", status="bogus"),
        call("deleteTeam", team_id="team-nope"),
        call("assignTask", title="fine"),
        call("listTasks"),
        "done",
    ]
    model = ScriptedModel(script)
    ext = TeamLeadExtension(SPEC_DIR)
    lead = HarnessAgent("lead", model, workspace=tmp_path / "ws", store=store, extensions=[ext])
    try:
        await lead.call("go", alice)
    finally:
        await ext.aclose()
    got = results(model)
    errors = [r.output for r in got if r.is_error]
    assert len(errors) == 9, [r.output for r in got]
    expected = [
        "no current team",
        "unknown spec 'ghost-spec'; available specs: perf-tester, reviewer, security-scanner",
        "'ghost' is not a member",
        "'ghost' is not a member",
        "unknown task(s) 't-99'",
        "already has a member named 'lead'",
        "no team 'team-nope'",
        "status",
        "no team 'team-nope'",
    ]
    for text, error in zip(expected, errors, strict=True):
        assert text in error
    assert got[-1].output.startswith("t-1 [pending] 'fine'")
    team_id = team_id_of(await lead.get_agent_state(alice))
    assert (await LocalTeamClient(store, alice).get_team(team_id)).members == []


def _texts(request: ModelRequest) -> str:
    return "\n".join(m.get_text_content() for m in request.messages)


async def test_the_lead_sees_member_messages_before_its_next_step(
    tmp_path: Path, store: BaseStore, alice: RuntimeContext
) -> None:
    model = ScriptedModel([call("createTeam", name="crew"), "created", "read it"])
    ext = TeamLeadExtension(SPEC_DIR)
    lead = HarnessAgent("lead", model, workspace=tmp_path / "ws", store=store, extensions=[ext])
    await lead.call("make a team", alice)
    team_id = team_id_of(await lead.get_agent_state(alice))
    client = LocalTeamClient(store, alice)
    await client.spawn_member(team_id, "a", "reviewer")
    await client.send_message(team_id, "a", "lead", "found a bug in y.py")
    await lead.call("news?", alice)
    assert f"Message from a (team {team_id}):\nfound a bug in y.py" in _texts(model.requests[-1])
    assert await client.unread(team_id, "lead") == []
    await ext.aclose()


def test_build_takes_the_specs_and_models_of_the_agent(tmp_path: Path) -> None:
    reviewer = ScriptedModel(["review"])
    agent = HarnessAgent(
        "lead",
        ScriptedModel([]),
        workspace=tmp_path,
        store="memory://",
        specs=SPEC_DIR,
        models={"reviewer-model": reviewer},
    )
    ext = TeamLeadExtension.build(agent, run_members="workers")
    assert sorted(ext.specs) == ["perf-tester", "reviewer", "security-scanner"]
    assert ext.models == {"reviewer-model": reviewer} and ext.run_members == "workers"
    assert sorted(TeamLeadExtension.build(agent, [ext.specs["reviewer"]]).specs) == ["reviewer"]


async def test_the_lead_sets_team_and_member_budgets_with_its_tools(
    tmp_path: Path, store: BaseStore, alice: RuntimeContext
) -> None:
    model = ScriptedModel(
        [
            call("createTeam", name="crew", max_tokens=5000, max_budget_usd=2.5),
            call("spawnMember", name="a", spec="reviewer", max_tokens=1000),
            "done",
        ]
    )
    ext = TeamLeadExtension(SPEC_DIR, run_members="workers")
    lead = HarnessAgent("lead", model, workspace=tmp_path / "ws", store=store, extensions=[ext])
    await lead.call("make a team", alice)
    team = await LocalTeamClient(store, alice).get_team(
        team_id_of(await lead.get_agent_state(alice))
    )
    assert (team.max_tokens, team.max_budget_usd) == (5000, 2.5)
    member = team.member("a")
    assert member is not None and (member.max_tokens, member.max_budget_usd) == (1000, None)
    await ext.aclose()


async def test_a_task_assigned_to_the_lead_is_a_tool_error_naming_the_members(
    tmp_path: Path, store: BaseStore, alice: RuntimeContext
) -> None:
    """The lead has no runtime and no claimTask/completeTask: a task it assigned to itself would
    stay pending for good, so the model is told whom it may assign to instead."""
    script = [
        call("createTeam", name="crew"),
        call("assignTask", title="solo", assignee="lead"),
        call("spawnMember", name="r", spec="reviewer"),
        call("assignTask", title="mine", assignee="lead"),
        call("assignTask", title="theirs", assignee="r"),
        call("listTasks"),
        "done",
    ]
    model = ScriptedModel(script)
    ext = TeamLeadExtension(SPEC_DIR)
    lead = HarnessAgent("lead", model, workspace=tmp_path / "ws", store=store, extensions=[ext])
    try:
        await lead.call("go", alice)
    finally:
        await ext.aclose()
    got = results(model)
    errors = [r.output for r in got if r.is_error]
    assert len(errors) == 2, [r.output for r in got]
    assert "'lead' is the lead of team" in errors[0] and "has no members yet" in errors[0]
    assert "spawnMember" in errors[0]
    assert "'lead' is the lead of team" in errors[1] and "assign it to 'r'" in errors[1]
    assert "omit assignee" in errors[1]
    listed = got[-1].output
    assert "theirs" in listed and "solo" not in listed and "mine" not in listed


async def test_the_lead_cannot_spawn_a_bypass_member_unless_it_is_in_bypass(
    tmp_path: Path, store: BaseStore, alice: RuntimeContext
) -> None:
    from agentscope_teams.tools import PermissionEngine

    script = [
        call("createTeam", name="crew"),
        call("spawnMember", name="a", spec="reviewer", permission_mode="bypassPermissions"),
        call("spawnMember", name="b", spec="reviewer", permission_mode="acceptEdits"),
        call("spawnMember", name="c", spec="reviewer", permission_mode="plan"),
        "done",
    ]
    model = ScriptedModel(script)
    ext = TeamLeadExtension(SPEC_DIR)
    lead = HarnessAgent(
        "lead",
        model,
        workspace=tmp_path / "ws",
        store=store,
        extensions=[ext],
        permissions=PermissionEngine(mode="default"),
    )
    try:
        await lead.call("go", alice)
    finally:
        await ext.aclose()
    got = [r for r in results(model) if r.name == "spawnMember"]
    assert [r.is_error for r in got] == [True, False, False]
    assert "'bypassPermissions' would let the member run every command unasked" in str(
        got[0].output
    )
    team_id = team_id_of(await lead.get_agent_state(alice))
    members = (await LocalTeamClient(store, alice).get_team(team_id)).members
    assert [(m.name, m.permission_mode) for m in members] == [("b", "accept_edits"), ("c", "plan")]
