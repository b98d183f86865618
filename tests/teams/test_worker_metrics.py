"""``agentscope-teams worker --metrics-port``: a real worker process serves ``/metrics``,
``/healthz`` and ``/readyz`` while it runs members; its counters match the work its members did."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient, TaskStatus, TeamLeadExtension

from ..backends import REDIS_URL, unique_namespace
from .helpers import eventually, team_id_of
from .scripts import START, TASKS, lead_script

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_worker(tmp_path: Path, org: str, port: int) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "agentscope_teams.cli", "worker", "--store", REDIS_URL]
    cmd += ["--specs", str(ROOT / "specs"), "--org", org, "--poll", "0.05"]
    cmd += ["--lease-ttl", "1", "--model", "python:tests.teams.scripts:member_model"]
    cmd += ["--metrics-port", str(port)]
    log = (tmp_path / "worker.log").open("wb")
    return subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ), stdout=log, stderr=log)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def total(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str) -> float:
    return sum(v for (n, _), v in found.items() if n == name)


async def test_a_worker_serves_metrics_of_its_members(tmp_path: Path, redis: BaseStore) -> None:
    ctx = RuntimeContext(session_id="s-lead", user_id="alice", org_id=unique_namespace())
    assert ctx.org_id is not None
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    ext = TeamLeadExtension(ROOT / "specs", run_members="workers", poll=0.05)
    lead = HarnessAgent(
        "lead", ScriptedModel(lead_script), workspace=tmp_path / "ws", store=redis, extensions=[ext]
    )
    worker = start_worker(tmp_path, ctx.org_id, port)
    try:
        async with httpx.AsyncClient(base_url=base, timeout=10) as http:

            async def up() -> bool:
                try:
                    return (await http.get("/healthz")).status_code == 200
                except httpx.TransportError:
                    return False

            await eventually(up, within=60)
            ready = await http.get("/readyz")
            assert (ready.status_code, ready.json()) == (200, {"status": "ok"})
            assert (await http.get("/nope")).status_code == 404
            with anyio.fail_after(120):
                await lead.call(START, ctx)
            team_id = team_id_of(await lead.get_agent_state(ctx))
            tasks = await LocalTeamClient(redis, ctx).list_tasks(team_id)
            assert [t.status for t in tasks] == [TaskStatus.COMPLETED] * len(TASKS)
            r = await http.get("/metrics")
            assert r.headers["content-type"].startswith("text/plain")
            found = samples(r.text)
        p = "agentscope_teams_"
        # every task was claimed and completed by a member in the worker process
        assert found[(p + "task_events_total", (("event", "claimed"),))] == len(TASKS)
        assert found[(p + "task_events_total", (("event", "completed"),))] == len(TASKS)
        done = (p + "tool_calls_total", (("outcome", "ok"), ("tool", "completeTask")))
        assert found[done] == len(TASKS)
        calls = total(found, p + "model_calls_total")
        assert calls > 0 and calls == total(found, p + "model_call_seconds_count")
        assert ctx.org_id not in r.text and team_id not in r.text
    finally:
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=30)
    assert code == 0, (tmp_path / "worker.log").read_text(errors="replace")
    async with httpx.AsyncClient(base_url=base, timeout=2) as http:
        with pytest.raises(httpx.TransportError):  # stopped with the worker
            await http.get("/healthz")
    await LocalTeamClient(redis, ctx).delete_team(team_id)


def test_a_busy_metrics_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        cmd = [sys.executable, "-m", "agentscope_teams.cli", "worker"]
        cmd += ["--store", f"file://{tmp_path / 'store'}", "--specs", str(ROOT / "specs")]
        cmd += ["--metrics-port", str(port)]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"--metrics-port: cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
