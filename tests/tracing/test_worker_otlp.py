"""Across processes: a team member runs in an ``agentscope-teams worker`` process that exports its
spans over OTLP/HTTP (set up from ``OTEL_*`` variables) to a receiver started here; its spans carry
the lead's trace id, joined through the task records in Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient, TaskStatus, TeamLeadExtension

from ..backends import REDIS_URL, unique_namespace
from ..teams.helpers import eventually, team_id_of
from ..teams.scripts import SPECS, START, lead_script
from .helpers import Spans, memory_provider
from .otlp_receiver import otlp_receiver

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def start_worker(tmp_path: Path, org: str, endpoint: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "agentscope_teams.cli", "worker", "--store", REDIS_URL]
    cmd += ["--specs", str(ROOT / "specs"), "--org", org, "--poll", "0.05"]
    cmd += ["--lease-ttl", "1", "--model", "python:tests.teams.scripts:member_model"]
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_SERVICE_NAME": "team-worker",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    env.pop("OTEL_TRACES_EXPORTER", None)
    log = (tmp_path / "worker.log").open("wb")
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=log)


async def test_a_member_in_a_worker_process_joins_the_leads_trace(
    tmp_path: Path, redis: BaseStore
) -> None:
    ctx = RuntimeContext(session_id="s-lead", user_id="alice", org_id=unique_namespace())
    assert ctx.org_id is not None
    provider, exporter = memory_provider()
    ext = TeamLeadExtension(ROOT / "specs", run_members="workers", poll=0.05)
    lead = HarnessAgent(
        "lead",
        ScriptedModel(lead_script),
        workspace=tmp_path / "ws",
        store=redis,
        extensions=[ext],
        tracer_provider=provider,
    )
    with otlp_receiver() as receiver:
        worker = start_worker(tmp_path, ctx.org_id, receiver.url)
        try:
            with anyio.fail_after(120):
                await lead.call(START, ctx)
            team_id = team_id_of(await lead.get_agent_state(ctx))
            tasks = await LocalTeamClient(redis, ctx).list_tasks(team_id)
            assert [t.status for t in tasks] == [TaskStatus.COMPLETED] * 6

            async def exported() -> bool:
                found = {s.name for s in receiver.named("invoke_agent ")}
                return all(f"invoke_agent {m}" in found for m in SPECS)

            await eventually(exported, within=30)
        finally:
            worker.send_signal(signal.SIGTERM)
            code = worker.wait(timeout=30)
        assert code == 0, (tmp_path / "worker.log").read_text(errors="replace")
        await LocalTeamClient(redis, ctx).delete_team(team_id)

    assert ext.runtime is None  # no member ran in this process
    local = Spans(exporter.get_finished_spans())
    root = local.one("invoke_agent lead")
    lead_trace = f"{root.context.trace_id:032x}"
    creators = {f"{s.context.span_id:016x}" for s in local.named("execute_tool assignTask")}
    creators |= {f"{s.context.span_id:016x}" for s in local.named("execute_tool createTeam")}
    members = receiver.named("invoke_agent ")
    assert {s.service for s in receiver.spans} == {"team-worker"}
    assert {s.trace_id for s in members} == {lead_trace}
    assert {s.parent_span_id for s in members} <= creators
    assert any(
        s.parent_span_id
        in creators - {f"{x.context.span_id:016x}" for x in local.named("execute_tool createTeam")}
        for s in members
    )
    member_ids = {s.span_id for s in members}
    tools = receiver.named("execute_tool ")
    assert tools and all(s.trace_id == lead_trace for s in tools)
    chats = receiver.named("chat ")
    assert chats and all(s.parent_span_id in member_ids for s in chats)
