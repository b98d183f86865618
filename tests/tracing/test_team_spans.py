"""A lead's team in the lead's process: the team, its tasks and the members' work on them are
one trace (members' calls are children of the span that created their task)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, TaskStatus, TeamLeadExtension
from agentscope_teams.tracing import names, trace_id_of

from ..subagents.helpers import ALICE
from ..teams.helpers import team_id_of
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
