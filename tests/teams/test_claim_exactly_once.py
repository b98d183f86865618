"""Exactly-once claims on the native queues: 4 processes x 16 claimers (asyncio tasks) drain one
board with short leases while a fifth process, holding 16 tasks, is SIGKILLed mid-run. Every task
is completed exactly once and none is lost: the killed process's tasks come back when their leases
run out and are claimed again."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import StoreBackend
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, TeamKeys
from agentscope_teams.teams.board import TaskBoard

from ..backends import StoreSpec
from . import claim_workers
from .board_paths import NATIVE_BACKENDS, native_spec
from .test_multiprocess import ctx_args
from .workers import CHILD_DEADLINE

pytestmark = pytest.mark.anyio

PROCS, CLAIMERS = 4, 16
TASKS = {"redis": 400, "redis-cluster": 400, "postgres": 300, "mariadb": 300}
LEASE = 3.0


@pytest.fixture(params=NATIVE_BACKENDS)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    return native_spec(request, tmp_path)


@pytest.fixture
async def store(store_spec: StoreSpec) -> Any:
    async with store_spec.open() as s:
        yield s


def _collected(out: Any, drainers: list[Any]) -> list[Any]:
    """Each drainer's log, in process order, once all reported (a failed drainer's traceback
    fails the test); the drainers are joined, or killed, whatever happens."""
    logs: dict[int, Any] = {}
    deadline = time.monotonic() + CHILD_DEADLINE
    try:
        while len(logs) < PROCS:
            index, ok, value = out.get(timeout=max(deadline - time.monotonic(), 0.1))
            assert ok, f"drainer {index} failed:\n{value}"
            logs[index] = value
    except queue.Empty:
        raise AssertionError("the drainers did not finish") from None
    finally:
        for d in drainers:
            d.join(timeout=10)
            if d.is_alive():
                d.kill()
    return [logs[i] for i in range(PROCS)]


def run(store_spec: StoreSpec, ctx: RuntimeContext, team_id: str) -> tuple[list[Any], list[str]]:
    """Start the victim, kill it once it holds its tasks, drain with the others (started while
    it holds them). Returns the drainers' logs and the victim's members."""
    spawn = mp.get_context("spawn")
    victims = [f"v-{i}" for i in range(CLAIMERS)]
    held = spawn.Event()
    victim = spawn.Process(
        target=claim_workers.hold,
        args=(store_spec, ctx_args(ctx), team_id, victims, LEASE, held),
    )
    out = spawn.Queue()
    drainers = [
        spawn.Process(
            target=claim_workers.drain,
            args=(store_spec, ctx_args(ctx), team_id, members(p), LEASE, out, p),
        )
        for p in range(PROCS)
    ]
    victim.start()
    try:
        assert held.wait(CHILD_DEADLINE), "the victim never held its tasks"
        for d in drainers:
            d.start()
        time.sleep(0.2)  # mid-run
    finally:
        assert victim.pid is not None
        os.kill(victim.pid, signal.SIGKILL)
        victim.join(30)
    assert victim.exitcode == -signal.SIGKILL
    return _collected(out, drainers), victims


def members(proc: int) -> list[str]:
    return [f"w{proc}-{i}" for i in range(CLAIMERS)]


async def test_every_task_is_done_exactly_once_with_a_claimer_killed(
    store_spec: StoreSpec, store: StoreBackend, alice: RuntimeContext
) -> None:
    client = LocalTeamClient(store, alice)
    names = [n for p in range(PROCS) for n in members(p)] + [f"v-{i}" for i in range(CLAIMERS)]
    team = await client.create_team("swarm", members=[Member(name=n) for n in names])
    keys = TeamKeys(alice.owner_scope(), team.id)
    assert TaskBoard(store, keys).queue.native, "the native path is under test"
    count = TASKS[store_spec.backend]
    ids = [(await client.assign_task(team.id, f"job {i}")).id for i in range(count)]

    logs, victims = await anyio.to_thread.run_sync(run, store_spec, alice, team.id)

    completions = Counter(task_id for log in logs for _, task_id in log)
    assert completions == Counter(ids)  # every task completed once, by a survivor
    tasks = await client.list_tasks(team.id)
    assert len(tasks) == count and not tasks.problems
    taken_over = 0
    for task in tasks:
        actions = [e.action for e in task.history]
        assert task.status is TaskStatus.COMPLETED and actions.count("completed") == 1
        # one holder at a time: every claim but the last ended with its lease running out
        claims = actions.count("claimed")
        assert actions == ["created"] + ["claimed", "lease_expired"] * (claims - 1) + [
            "claimed",
            "completed",
        ]
        holders = [e.actor for e in task.history if e.action == "claimed"]
        assert task.owner == holders[-1] and task.result == task.owner
        if holders[0] in victims:
            taken_over += 1  # held when the victim died: its lease ran out, claimed again
            assert claims >= 2
    assert taken_over == CLAIMERS
    assert await client.wait_for_tasks(team.id, timeout=0)
    assert len({m for log in logs for m, _ in log}) > PROCS


#: Members per process of the routed drain, and tasks: a third free, the rest routed round-robin.
ROUTED_MEMBERS, ROUTED_TASKS = 4, 240


def run_routed(store_spec: StoreSpec, ctx: RuntimeContext, team_id: str) -> list[Any]:
    """:data:`PROCS` processes of :data:`ROUTED_MEMBERS` claimers drain the board; their logs."""
    spawn = mp.get_context("spawn")
    out = spawn.Queue()
    drainers = [
        spawn.Process(
            target=claim_workers.drain_routed,
            args=(store_spec, ctx_args(ctx), team_id, members(p)[:ROUTED_MEMBERS], out, p),
        )
        for p in range(PROCS)
    ]
    for d in drainers:
        d.start()
    return _collected(out, drainers)


async def test_free_and_routed_tasks_are_each_claimed_once_by_processes(
    store_spec: StoreSpec, store: StoreBackend, alice: RuntimeContext
) -> None:
    """Processes of claimers drain a board where a third of the tasks are free and the rest
    routed to the claimers in turn: every task is completed once, a routed one by its assignee,
    and no claim came back empty while a task routed to its member was pending.

    On MariaDB a claimer whose locking scan examines another member's routed task holds its row
    for that moment, so that member's pick skips it; the claim then waits for the row and takes
    it (``SqlBoardQueue._claim_waiting``) instead of coming back empty (it did: 46 empty claims
    in one CI run)."""
    client = LocalTeamClient(store, alice)
    names = [n for p in range(PROCS) for n in members(p)[:ROUTED_MEMBERS]]
    team = await client.create_team("routed", members=[Member(name=n) for n in names])
    routed_to: dict[str, str | None] = {}
    for i in range(ROUTED_TASKS):
        who = None if i % 3 == 0 else names[i % len(names)]
        routed_to[(await client.assign_task(team.id, f"job {i}", assignee=who)).id] = who

    logs = await anyio.to_thread.run_sync(run_routed, store_spec, alice, team.id)

    done = [entry for log in logs for entry in log[0]]
    assert Counter(task_id for _, task_id in done) == Counter(routed_to.keys())
    for member, task_id in done:
        assert routed_to[task_id] in (None, member), (member, task_id)
    assert [entry for log in logs for entry in log[1]] == []
    assert len({m for m, t in done if routed_to[t] is None}) > 1  # the free ones were shared
