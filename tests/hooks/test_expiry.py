"""TaskCompleted for a task failed by lease expiry (its owner died with every attempt used): fired
once, by the process that failed it, while several processes race to it, some claiming (as woken
members do) and some sweeping (``reap_expired``)."""

from __future__ import annotations

import multiprocessing as mp
from datetime import datetime, timedelta
from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import utcnow
from agentscope_teams.teams.client import LocalTeamClient
from agentscope_teams.teams.rules.models import Member, TaskStatus

from ..backends import StoreSpec, make_spec, unique_namespace
from ..conftest import require_service
from . import racing
from .helpers import read_lines

RACERS = 4
LEASE = 0.5  # seconds: the dead owner's lease, waited out before the race


@pytest.fixture(params=["file", "redis", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    require_service(request.param)
    return make_spec(request.param, tmp_path)


def _until(moment: datetime) -> float:
    """Seconds from now until a little past ``moment`` (a lease's end)."""
    return max(0.0, (moment - utcnow() + timedelta(seconds=0.1)).total_seconds())


def _race(spec: StoreSpec, org: str, team_id: str, log: Path) -> list[int]:
    racing.logging_hooks(log, "TaskCompleted")  # writes the logging script once, before the race
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(RACERS)
    procs = [
        ctx.Process(
            target=racing.settle_lapsed,
            args=(spec, org, team_id, f"m{i}", ("claim", "reap")[i % 2], str(log), barrier),
        )
        for i in range(RACERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    return [p.exitcode if p.exitcode is not None else -1 for p in procs]


@pytest.mark.slow
async def test_a_task_failed_by_lease_expiry_fires_task_completed_once(
    shared: StoreSpec, tmp_path: Path
) -> None:
    org = unique_namespace()
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=org)
    members = [Member(name="ann"), *(Member(name=f"m{i}") for i in range(RACERS))]
    async with shared.open() as store:
        client = LocalTeamClient(store, ctx)
        team = await client.create_team("t", members=members)
        task = await client.assign_task(team.id, "build", max_attempts=1)
        held = await client.claim_task(team.id, "ann", task.id, task_lease=LEASE)
        assert held is not None and held.lease_expires_at is not None
        await anyio.sleep(_until(held.lease_expires_at))  # ann died: nobody renews the lease
    log = tmp_path / "tasks.jsonl"
    codes = await anyio.to_thread.run_sync(_race, shared, org, team.id, log)
    assert codes == [0] * RACERS
    ends = [e for e in read_lines(log) if e["hook_event_name"] == "TaskCompleted"]
    assert len(ends) == 1, ends
    assert (ends[0]["task_id"], ends[0]["status"], ends[0]["teammate_name"]) == (
        task.id,
        "failed",
        "ann",
    )
    async with shared.open() as store:
        failed = await LocalTeamClient(store, ctx).get_task(team.id, task.id)
    assert failed.status is TaskStatus.FAILED and "expired" in (failed.error or "")


async def test_a_member_s_claim_that_meets_the_lapsed_task_reports_it(tmp_path: Path) -> None:
    """The woken member's claim, not a sweep, meets the task first (as in a running team)."""
    from agentscope_teams.store import InMemoryStore

    log = tmp_path / "tasks.jsonl"
    ctx = RuntimeContext(session_id="s1", user_id="alice")
    hooks = racing.logging_hooks(log, "TaskCompleted")
    client = LocalTeamClient(InMemoryStore(), ctx, hooks=hooks)
    team = await client.create_team("t", members=[Member(name="ann"), Member(name="bob")])
    task = await client.assign_task(team.id, "build", max_attempts=1)
    held = await client.claim_task(team.id, "ann", task.id, task_lease=LEASE)
    assert held is not None and held.lease_expires_at is not None
    await anyio.sleep(_until(held.lease_expires_at))
    assert await client.claim_task(team.id, "bob") is None  # nothing left to claim
    [end] = read_lines(log)
    assert (end["task_id"], end["status"], end["teammate_name"]) == (task.id, "failed", "ann")
    await client.claim_task(team.id, "bob")  # met again: already reported, never twice
    assert len(read_lines(log)) == 1


async def test_claims_and_finishes_after_a_pinned_claim_keep_the_client_s_clock(
    tmp_path: Path,
) -> None:
    """A client with TaskCompleted hooks claims through a view pinned at the claim's instant;
    that view's clock must not stay in the board the client keeps per team: a later claim got a
    lease that ended where the first one did (at once, to every other claimer), and a later
    completion the first claim's time."""
    from agentscope_teams.store import InMemoryStore

    now = [utcnow()]
    hooks = racing.logging_hooks(tmp_path / "tasks.jsonl", "TaskCompleted")
    ctx = RuntimeContext(session_id="s1", user_id="alice")
    client = LocalTeamClient(InMemoryStore(), ctx, hooks=hooks, clock=lambda: now[0])
    team = await client.create_team("t", members=[Member(name="ann"), Member(name="bob")])
    await client.assign_task(team.id, "one")
    await client.assign_task(team.id, "two")
    first = await client.claim_task(team.id, "ann", task_lease=3600)
    assert first is not None and first.lease_expires_at == now[0] + timedelta(seconds=3600)

    now[0] += timedelta(seconds=600)
    second = await client.claim_task(team.id, "bob", task_lease=60)
    assert second is not None and second.id != first.id
    assert second.lease_expires_at == now[0] + timedelta(seconds=60)
    now[0] += timedelta(seconds=5)
    done = await client.complete_task(team.id, "bob", second.id, "ok")
    assert done.updated_at == now[0]
