"""A lead's team in the lead's process: the team, its tasks and the members' work on them are
one trace (members' calls are children of the span that created their task)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from opentelemetry.trace import get_current_span

from agentscope_teams import HarnessAgent, tracing
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.teams import (
    LocalTeamClient,
    TaskStatus,
    TeamLeadExtension,
)
from agentscope_teams.teams.member.builder import member_session_id
from agentscope_teams.tracing import names, trace_id_of

from ..subagents.helpers import ALICE
from ..teams.helpers import member_runtime, team_id_of
from ..teams.scripts import SPECS, START, lead_script, member_script
from .helpers import Spans, attrs, events, memory_provider

pytestmark = pytest.mark.anyio
SPEC_DIR = Path(__file__).resolve().parents[2] / "specs"


async def test_lead_team_and_member_tasks_are_one_trace(tmp_path: Path) -> None:
    provider, exporter = memory_provider()
    store = InMemoryStore()
    ext = TeamLeadExtension(SPEC_DIR, member_model=ScriptedModel(member_script), poll=0.05)
    lead = HarnessAgent(
        "lead",
        ScriptedModel(lead_script),
        workspace=tmp_path,
        store=store,
        extensions=[ext],
        tracer_provider=provider,
    )
    try:
        with anyio.fail_after(60):
            await lead.call(START, ALICE)
    finally:
        await ext.aclose()
    team_id = team_id_of(await lead.get_agent_state(ALICE))
    client = LocalTeamClient(store, ALICE)
    team, tasks = await client.get_team(team_id), await client.list_tasks(team_id)
    assert [t.status for t in tasks] == [TaskStatus.COMPLETED] * 6

    spans = Spans(exporter.get_finished_spans())
    root = spans.one("invoke_agent lead")
    lead_trace = f"{root.context.trace_id:032x}"
    assert spans.trace_ids() == {root.context.trace_id}
    assert trace_id_of(team.trace_context) == lead_trace
    creators = {f"{s.context.span_id:016x}": s for s in spans.named("execute_tool assignTask")}
    assert len(creators) == 6
    for task in tasks:  # each task names the assignTask call that created it
        assert task.trace_context is not None
        assert task.trace_context["traceparent"].split("-")[2] in creators

    for member in SPECS:
        calls = spans.named(f"invoke_agent {member}")
        assert calls, f"no span of member {member}: {spans.names()}"
        parents = set()
        for call in calls:  # woken for a task: under its creator; for messages only: the team's
            *joined, top = spans.ancestors(call)
            assert top == "invoke_agent lead" and attrs(call)[names.AGENT_NAME] == member
            parents.add(joined[0])
        assert "execute_tool assignTask" in parents
        assert parents <= {"execute_tool assignTask", "execute_tool createTeam"}
        claims = [
            events(s)[names.TASK_CLAIM]
            for s in spans.named("execute_tool claimTask")
            if names.TASK_CLAIM in events(s) and events(s)[names.TASK_CLAIM][names.MEMBER] == member
        ]
        finished = [
            events(s)[names.TASK_FINISH]
            for s in spans.named("execute_tool completeTask")
            if events(s)[names.TASK_FINISH][names.MEMBER] == member
        ]
        owned = sorted(t.id for t in tasks if t.owner == member)
        assert sorted(c[names.TASK_ID] for c in claims) == owned
        assert sorted(f[names.TASK_ID] for f in finished) == owned
        assert {f[names.TASK_STATUS] for f in finished} == {"completed"}
        assert {c[names.TEAM_ID] for c in claims} == {team_id}
    for tool in spans.named("execute_tool claimTask") + spans.named("execute_tool completeTask"):
        assert spans.ancestors(tool)[0].startswith("invoke_agent ")
        assert spans.ancestors(tool)[-1] == "invoke_agent lead"


async def test_a_member_woken_for_two_tasks_joins_the_first_and_links_the_second(
    tmp_path: Path,
) -> None:
    provider, exporter = memory_provider()
    store = InMemoryStore()
    lead = LocalTeamClient(store, ALICE)
    team = await lead.create_team("crew")
    await lead.spawn_member(team.id, "reviewer", "reviewer", member_session_id(team.id, "r"))
    creators = []
    for title in ("first", "second"):  # each task created under a span of its own trace
        with tracing.invoke_agent("creator", provider=provider, session_id=title):
            creators.append(get_current_span().get_span_context())
            await lead.assign_task(team.id, title, assignee="reviewer")

    runtime = member_runtime(store, tmp_path, ALICE, team.id, ScriptedModel(["done"]))
    try:
        with tracing.invoke_agent("lead", provider=provider, session_id="lead"):
            await runtime.step()  # the member's call keeps the lead's tracing choice
        [slot] = runtime.slots.values()
        assert slot.call is not None, "the member was not woken"
        with anyio.fail_after(30):
            await slot.call  # the member's call, to its end
    finally:
        await runtime.aclose()

    [member] = Spans(exporter.get_finished_spans()).named("invoke_agent reviewer")
    first, second = creators
    assert member.parent is not None
    assert (member.context.trace_id, member.parent.span_id) == (first.trace_id, first.span_id)
    assert [(link.context.trace_id, link.context.span_id) for link in member.links] == [
        (second.trace_id, second.span_id)
    ]
    inner = [s for s in exporter.get_finished_spans() if s.context.trace_id == first.trace_id]
    assert all(not s.links for s in inner if s is not member)  # the links are the call's alone
