"""The compose file's ``serve`` and two workers, started here as plain processes over one store,
scraped by a real Prometheus with the recipe's jobs: every series docs/deploy.md lists, read back
through its HTTP API (tasks by status, claims and completions, claim and wake-up latency, model
request latency, tokens and cost by model and agent, tool calls, hook and sandbox denials, store
latency and errors by backend, live agent calls and members, budget use and rate-limit waits)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import yaml

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient, TaskStatus, TeamLeadExtension
from agentscope_teams.teams.directory import TeamRuntimeRecord, put_record

from ..backends import REQUIRE_SERVICES
from ..teams.helpers import eventually, team_id_of
from ..teams.scripts import START, TASKS, lead_script
from .models import PRICED, USAGE
from .recipe import DEPLOY, ROOT, compose, free_port, replaced

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
MODEL = "python:tests.deploy.models:member_model"
P = "agentscope_teams_"


def prometheus_binary() -> str:
    found = shutil.which("prometheus")
    if found is None:
        msg = "the prometheus binary is not installed (Debian package 'prometheus')"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and AGENTSCOPE_TEAMS_REQUIRE_SERVICES=1 forbids skipping")
        pytest.skip(msg)
    return found


@contextmanager
def process(argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` running (from the repository root), stopped with SIGTERM; it must exit 0."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=dict(os.environ), stdout=out, stderr=out)
        try:
            yield proc
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
    assert code == 0, f"{argv[1]} exited {code}: {log.read_text(errors='replace')[-3000:]}"


def scrape_config(targets: dict[str, list[str]], path: Path) -> Path:
    """The recipe's prometheus.yml with its targets moved to this host's ports, scraping fast."""
    config: dict[str, Any] = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    config["global"].update(scrape_interval="1s", evaluation_interval="1s")
    for job in config["scrape_configs"]:
        wanted = [t for c in job["static_configs"] for t in c["targets"]]
        job["static_configs"] = [{"targets": [targets[t][0] for t in wanted]}]
    path.write_text(yaml.safe_dump(config))
    return path


async def query(prom: httpx.AsyncClient, expr: str) -> dict[str, float]:
    """An instant query: its value per series (labels job, and status / event where present)."""
    r = await prom.get("/api/v1/query", params={"query": expr})
    r.raise_for_status()
    out = {}
    for item in r.json()["data"]["result"]:
        labels = item["metric"]
        key = ",".join(f"{k}={labels[k]}" for k in sorted(labels) if k != "instance")
        out[key] = float(item["value"][1])
    return out


async def prometheus_ready(prom: httpx.AsyncClient) -> None:
    """Wait until Prometheus answers queries (it listens, then answers 503 until its storage is
    ready)."""

    async def ready() -> bool:
        try:
            return (await prom.get("/-/ready")).status_code == 200
        except httpx.TransportError:
            return False

    await eventually(ready, within=90)


async def settles(prom: httpx.AsyncClient, expr: str, want: dict[str, float]) -> None:
    async def check() -> bool:
        return await query(prom, expr) == want

    try:
        await eventually(check, within=90)
    except AssertionError:
        raise AssertionError(f"{expr}: {await query(prom, expr)} != {want}") from None


async def test_prometheus_scrapes_the_compose_services(tmp_path: Path) -> None:
    binary = prometheus_binary()
    store = f"sqlite:///{tmp_path / 'teams.db'}"
    services = compose()["services"]
    ports = {name: free_port() for name in ("serve", "worker-1", "worker-2", "prometheus")}
    serve_argv = replaced(
        services["serve"]["command"],
        {"--store": store, "--host": "127.0.0.1", "--port": str(ports["serve"])},
    )
    fast = ["--poll", "0.05", "--lease-ttl", "2"]
    # a team budget and a shared rate limit (both far from binding): their series move
    fast += ["--max-tokens", "100000000", "--rate-limit", "rpm=600000"]
    worker_argv = {
        name: [
            *replaced(
                services[name]["command"],
                {
                    "--store": store,
                    "--specs": str(ROOT / "specs"),
                    "--model": MODEL,
                    "--metrics-port": str(ports[name]),
                    "--metrics-host": "127.0.0.1",
                },
            ),
            *fast,
        ]
        for name in ("worker-1", "worker-2")
    }
    targets = {
        f"{name}:{port}": [f"127.0.0.1:{ports[name]}"]
        for name, port in (("serve", 8765), ("worker-1", 9101), ("worker-2", 9101))
    }
    config = scrape_config(targets, tmp_path / "prometheus.yml")
    prom_argv = [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{ports['prometheus']}",
    ]
    with ExitStack() as stack:
        stack.enter_context(process(serve_argv, tmp_path / "serve.log"))
        for name, argv in worker_argv.items():
            stack.enter_context(process(argv, tmp_path / f"{name}.log"))
        stack.enter_context(process(prom_argv, tmp_path / "prometheus.log"))
        async with (
            store_from_url(store) as opened,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports['prometheus']}") as prom,
        ):
            await scenario(opened, prom, tmp_path)


async def scenario(store: BaseStore, prom: httpx.AsyncClient, tmp_path: Path) -> None:
    """A lead whose members run in the workers does its tasks; a team no worker serves leaves three
    pending; then every series is read back through Prometheus."""
    jobs = "job=agentscope-teams-serve", "job=agentscope-teams-workers"
    await prometheus_ready(prom)
    await settles(prom, "sum by (job) (up)", {jobs[0]: 1.0, jobs[1]: 2.0})
    ctx = RuntimeContext(session_id="s-lead", user_id="alice", org_id="acme")
    ext = TeamLeadExtension(ROOT / "specs", run_members="workers", poll=0.05)
    lead = HarnessAgent(
        "lead", ScriptedModel(lead_script), workspace=tmp_path / "ws", store=store, extensions=[ext]
    )
    with anyio.fail_after(180):
        await lead.call(START, ctx)
    client = LocalTeamClient(store, ctx)
    team_id = team_id_of(await lead.get_agent_state(ctx))
    assert {t.status for t in await client.list_tasks(team_id)} == {TaskStatus.COMPLETED}
    # a team whose members run in its lead's process (mode "local": no worker takes its tasks)
    idle = await client.create_team("nobody serves this one")
    record = TeamRuntimeRecord(team_id=idle.id, org_id="acme", user_id="alice", lead=idle.lead)
    await put_record(store, ctx, record)
    for i in range(3):
        await client.assign_task(idle.id, actor=idle.lead, title=f"queued {i}")
    n = float(len(TASKS))
    await settles(prom, f'sum({P}task_events_total{{event="claimed"}})', {"": n})
    await settles(prom, f'sum({P}task_events_total{{event="completed"}})', {"": n})
    await settles(prom, f"sum({P}task_wait_seconds_count)", {"": n})
    await settles(
        prom, f"sum by (status) ({P}tasks)", {"status=in_progress": 0.0, "status=pending": 3.0}
    )
    # the lead's team ended when its call returned with every task done (it left the team
    # directory, docs/teams.md): only the idle team is counted
    await settles(prom, f"max({P}teams)", {"": 1.0})
    await model_calls_agree(prom)
    await operations_series(prom, n)
    labels = await prom.get("/api/v1/labels")
    assert "team_id" not in labels.json()["data"] and "session_id" not in labels.json()["data"]


async def model_calls_agree(prom: httpx.AsyncClient) -> None:
    """Every series that counts the workers' model calls agrees with the others. Each is its own
    instant query and a member's last call may land between two of them, so they are read again
    until they agree. A call may end in error: a member woken as its team ends has its request
    cancelled by the worker that drops the team; it counts as a call, with no tokens, and with a
    rate-limit wait only if it was cancelled after its admission (the wait is observed for each
    admitted call)."""
    workers = "job=agentscope-teams-workers"
    per_call = USAGE.input_tokens + USAGE.output_tokens
    seen: list[dict[str, float]] = []

    async def agree() -> bool:
        calls = await query(prom, f"sum by (job) ({P}model_call_seconds_count)")
        outcomes = await query(prom, f"sum by (outcome) ({P}model_calls_total)")
        n, ok = calls.get(workers, 0.0), outcomes.get("outcome=ok", 0.0)
        found = [
            calls,
            {"": sum(outcomes.values())},
            await query(prom, f"sum by (direction) ({P}model_tokens_total)"),
            await query(prom, f"sum by (agent) ({P}model_tokens_total)"),
            await query(prom, f"sum by (scope) ({P}budget_tokens_total)"),
        ]
        waits = (await query(prom, f"sum({P}ratelimit_wait_seconds_count)")).get("", -1.0)
        seen[:] = [outcomes, *found, {"waits": waits}]
        expected = [
            {workers: n},
            {"": n},
            {
                "direction=input": USAGE.input_tokens * ok,
                "direction=output": USAGE.output_tokens * ok,
            },
            {"agent=agent": per_call * ok},
            {"scope=team": per_call * ok},
        ]
        return ok > 0 and ok <= waits <= n and found == expected

    try:
        await eventually(agree, within=90)
    except AssertionError:
        raise AssertionError(f"the model-call series never agreed: {seen}") from None


async def operations_series(prom: httpx.AsyncClient, tasks: float) -> None:
    """The series an operator watches besides the board's: each found, moved by the work done."""
    jobs = "job=agentscope-teams-serve", "job=agentscope-teams-workers"
    await prometheus_ready(prom)
    await settles(prom, f"sum({P}task_wakeup_seconds_count)", {"": tasks})  # all were assigned
    cost = await query(prom, f"sum by (model) ({P}model_cost_usd_total)")
    assert set(cost) == {f"model={PRICED}"} and cost[f"model={PRICED}"] > 0
    assert (await query(prom, f"sum({P}tool_calls_total)"))[""] > 0
    for name in ("hook_denials_total", "sandbox_denials_total"):  # known labels start at 0
        found = await query(prom, f"sum by (job) ({P}{name})")
        assert found == {jobs[0]: 0.0, jobs[1]: 0.0}, (name, found)
    store_ops = await query(prom, f"sum by (job, backend) ({P}store_operation_seconds_count)")
    assert set(store_ops) == {f"backend=sqlite,{j}" for j in jobs}, store_ops
    errors = await query(prom, f"sum by (job, backend) ({P}store_errors_total)")
    assert errors == {f"backend=sqlite,{j}": 0.0 for j in jobs}, errors
    running = await query(prom, f"sum by (job) ({P}agent_calls_running)")
    assert set(running) == set(jobs)
    assert (await query(prom, f"max({P}members)"))[""] >= 0
