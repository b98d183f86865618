"""Members in `agentscope-teams worker` processes over Redis: a full team run, and a killed worker
whose members (and their claimed tasks) another worker takes over once the leases expire.

The workers are real processes running the CLI; their scripted model comes from
``--model python:tests.teams.scripts:member_model`` (``MEMBER_DELAY`` slows each model step).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import (
    LocalTeamClient,
    MemberStatus,
    TaskStatus,
    TeamLeadExtension,
    TeamStatus,
)
from agentscope_teams.teams.directory import get_record
from agentscope_teams.teams.lead.state import TeamLeadState

from ..backends import REDIS_URL
from .helpers import eventually, team_id_of
from .scripts import START, lead_script

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


class Workers:
    """Worker processes started by one test (killed at the end if still running)."""

    def __init__(self, tmp_path: Path, org: str) -> None:
        self.tmp_path, self.org, self.procs = tmp_path, org, list[subprocess.Popen[bytes]]()

    def start(self, delay: float = 0.0, store: str = REDIS_URL) -> subprocess.Popen[bytes]:
        log = (self.tmp_path / f"worker-{len(self.procs)}.log").open("wb")
        cmd = [sys.executable, "-m", "agentscope_teams.cli", "worker", "--store", store]
        cmd += ["--specs", str(ROOT / "specs"), "--org", self.org, "--poll", "0.05"]
        cmd += ["--lease-ttl", "1", "--model", "python:tests.teams.scripts:member_model"]
        env = {**os.environ, "MEMBER_DELAY": str(delay)}
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=log)
        self.procs.append(proc)
        return proc

    def log(self, index: int) -> str:
        return (self.tmp_path / f"worker-{index}.log").read_text(errors="replace")


@pytest.fixture
def workers(tmp_path: Path, ctx: RuntimeContext) -> Iterator[Workers]:
    assert ctx.org_id is not None
    found = Workers(tmp_path, ctx.org_id)
    yield found
    for proc in found.procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def make_lead(tmp_path: Path, store: BaseStore) -> tuple[HarnessAgent, TeamLeadExtension]:
    ext = TeamLeadExtension(ROOT / "specs", run_members="workers", poll=0.05)
    model = ScriptedModel(lead_script)
    lead = HarnessAgent("lead", model, workspace=tmp_path / "ws", store=store, extensions=[ext])
    return lead, ext


async def finish(lead: HarnessAgent, ctx: RuntimeContext, team_id: str) -> None:
    """Every task completed by the member it was assigned to; the lead's reply ended with the
    work done, so the team ended with it: completed, ``ended_at`` set, every member stopped."""
    client = LocalTeamClient(lead.store, ctx)
    tasks = await client.list_tasks(team_id)
    assert [t.status for t in tasks] == [TaskStatus.COMPLETED] * 6
    assert [t.owner for t in tasks] == ["reviewer", "security", "perf"] * 2
    team = await client.get_team(team_id)
    assert team.status is TeamStatus.COMPLETED and team.ended_at is not None
    assert {m.status for m in team.members} == {MemberStatus.STOPPED}
    # workers no longer find it: its directory record is gone
    assert await get_record(lead.store, ctx, team_id) is None


async def test_members_run_in_a_worker_process(
    tmp_path: Path, redis: BaseStore, ctx: RuntimeContext, workers: Workers
) -> None:
    worker = workers.start()
    lead, ext = make_lead(tmp_path, redis)
    with anyio.fail_after(120):
        await lead.call(START, ctx)
    team_id = team_id_of(await lead.get_agent_state(ctx))
    client = LocalTeamClient(redis, ctx)
    await finish(lead, ctx, team_id)
    assert ext.runtime is None  # nothing ran in the lead's process

    worker.send_signal(signal.SIGTERM)  # a clean stop releases the leases and marks members
    assert worker.wait(timeout=30) == 0, workers.log(0)
    team = await client.get_team(team_id)
    assert {m.status.value for m in team.members} == {"stopped"}
    await client.delete_team(team_id)


async def test_a_killed_workers_members_are_taken_over(
    tmp_path: Path, redis: BaseStore, ctx: RuntimeContext, workers: Workers
) -> None:
    first = workers.start(delay=0.4)
    lead, _ = make_lead(tmp_path, redis)
    client = LocalTeamClient(redis, ctx)
    held: list[str] = []

    async def kill_when_busy() -> None:
        async def busy() -> bool:
            state = await lead.get_agent_state(ctx)
            if TeamLeadState.peek(state).team_id is None:
                return False
            tasks = await client.list_tasks(team_id_of(state))
            held[:] = [t.id for t in tasks if t.status is TaskStatus.IN_PROGRESS]
            return bool(held)

        await eventually(busy, within=60)
        first.send_signal(signal.SIGKILL)
        assert first.wait(timeout=10) == -signal.SIGKILL
        workers.start()

    async with anyio.create_task_group() as tg:
        tg.start_soon(kill_when_busy)
        with anyio.fail_after(150):
            await lead.call(START, ctx)
    team_id = team_id_of(await lead.get_agent_state(ctx))
    await finish(lead, ctx, team_id)
    assert held, "the first worker held no task when it was killed"
    for task_id in held:  # the member was taken over and finished its own task
        task = await client.get_task(team_id, task_id)
        assert task.status is TaskStatus.COMPLETED
        assert [e.action for e in task.history][-1] == "completed"
    assert "Ctrl-C to stop" in workers.log(1)
    await client.delete_team(team_id)
