"""Real processes sharing one store: exactly-once claims, crashed claimers, concurrent mailboxes."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from collections import Counter

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus

from ..backends import StoreSpec
from . import workers

pytestmark = pytest.mark.anyio

PROCS, PER_PROC = 4, 4
#: Tasks raced over per backend: the SQL backends pay a commit per write, so they race over fewer.
TASKS = {
    "file": 400,
    "redis": 400,
    "redis-cluster": 200,
    "sqlite": 200,
    "mariadb": 200,
    "postgres": 200,
}
DEADLINE = 60.0


def ctx_args(ctx: RuntimeContext) -> workers.CtxArgs:
    fields = {"session_id": ctx.session_id, "user_id": ctx.user_id, "org_id": ctx.org_id}
    return {k: v for k, v in fields.items() if v is not None}


def claimer_names() -> list[list[str]]:
    return [[f"w{p}-{i}" for i in range(PER_PROC)] for p in range(PROCS)]


async def test_every_task_is_claimed_and_completed_exactly_once(
    shared_spec: StoreSpec, store: BaseStore, alice: RuntimeContext
) -> None:
    groups = claimer_names()
    client = LocalTeamClient(store, alice)
    team = await client.create_team("swarm", members=[Member(name=n) for g in groups for n in g])
    count = TASKS[shared_spec.backend]
    ids = [(await client.assign_task(team.id, f"job {i}")).id for i in range(count)]
    args = [(shared_spec, ctx_args(alice), team.id, g) for g in groups]
    logs = await anyio.to_thread.run_sync(workers.run_children, workers.claim_all, args)

    claims = [entry for log in logs for entry in log]
    assert Counter(task_id for _, task_id in claims) == Counter(ids)
    owner_of = dict((task_id, member) for member, task_id in claims)
    for task in await client.list_tasks(team.id):
        assert task.status is TaskStatus.COMPLETED and task.attempts == 1
        assert [e.action for e in task.history] == ["created", "claimed", "completed"]
        assert task.owner == owner_of[task.id] and task.result == f"done by {task.owner}"
    assert await client.wait_for_tasks(team.id, timeout=0)
    assert len({member for member, _ in claims}) > 1


async def test_sixteen_claimers_race_for_one_task(
    shared_spec: StoreSpec, store: BaseStore, alice: RuntimeContext
) -> None:
    groups = claimer_names()
    client = LocalTeamClient(store, alice)
    team = await client.create_team("race", members=[Member(name=n) for g in groups for n in g])
    task = await client.assign_task(team.id, "the one")
    args = [(shared_spec, ctx_args(alice), team.id, task.id, g) for g in groups]
    results = await anyio.to_thread.run_sync(workers.run_children, workers.claim_one, args)

    outcomes = [o for r in results for o in r]
    winners = [m for m, outcome in outcomes if outcome == "won"]
    assert len(outcomes) == PROCS * PER_PROC and len(winners) == 1
    final = await client.get_task(team.id, task.id)
    assert (final.owner, final.attempts) == (winners[0], 1)


async def test_task_of_a_killed_claimer_is_claimed_again(
    shared_spec: StoreSpec, store: BaseStore, alice: RuntimeContext
) -> None:
    client = LocalTeamClient(store, alice)
    team = await client.create_team("crash", members=[Member(name="a"), Member(name="b")])
    task = await client.assign_task(team.id, "survive a crash")
    spawn = mp.get_context("spawn")
    claimed = spawn.Event()
    proc = spawn.Process(
        target=workers.claim_and_hang,
        args=(shared_spec, ctx_args(alice), team.id, "a", task.id, claimed),
    )
    proc.start()
    try:
        assert await anyio.to_thread.run_sync(claimed.wait, DEADLINE), "child never claimed"
    finally:
        assert proc.pid is not None
        os.kill(proc.pid, signal.SIGKILL)
        await anyio.to_thread.run_sync(proc.join, DEADLINE)
    assert proc.exitcode == -signal.SIGKILL
    assert (await client.get_task(team.id, task.id)).owner == "a"

    with anyio.fail_after(DEADLINE):  # the 1 s lease must run out first
        while True:
            taken = await client.claim_task(team.id, "b")
            if taken is not None:
                break
            await anyio.sleep(0.1)
    done = await client.complete_task(team.id, "b", taken.id, "recovered")
    assert (done.id, done.status, done.attempts) == (task.id, TaskStatus.COMPLETED, 2)
    actions = [(e.actor, e.action) for e in done.history]
    assert actions == [
        ("lead", "created"),
        ("a", "claimed"),
        ("board", "lease_expired"),
        ("b", "claimed"),
        ("b", "completed"),
    ]


async def test_concurrent_senders_deliver_everything_once_in_order(
    shared_spec: StoreSpec, store: BaseStore, alice: RuntimeContext
) -> None:
    senders, count = [f"s{i}" for i in range(PROCS)], 10
    client = LocalTeamClient(store, alice)
    team = await client.create_team("chat", members=[Member(name=n) for n in senders])
    everyone = team.participants()
    args = [
        (shared_spec, ctx_args(alice), team.id, s, [p for p in everyone if p != s], count)
        for s in senders
    ]
    await anyio.to_thread.run_sync(workers.run_children, workers.send_many, args)

    for member in everyone:
        msgs, after = [], 0
        while page := await client.read_messages(team.id, member, after=after, limit=7):
            msgs.extend(page)
            after = page[-1].seq
        seqs = [m.seq for m in msgs]
        assert seqs == sorted(set(seqs))
        assert all(m.recipient == member and m.sender != member for m in msgs)
        for s in senders:
            if s == member:
                continue
            got = [m.content for m in msgs if m.sender == s]
            assert got == [f"{s}:{i}" for i in range(count)] + [f"{s}:bye"]
        assert len(msgs) == (count + 1) * len([s for s in senders if s != member])


async def test_cursor_resumes_in_a_new_process(
    shared_spec: StoreSpec, store: BaseStore, alice: RuntimeContext
) -> None:
    client = LocalTeamClient(store, alice)
    team = await client.create_team("inbox", members=[Member(name="a"), Member(name="b")])
    sent = [f"note {i}" for i in range(10)]
    for text in sent:
        await client.send_message(team.id, "a", "b", text)
    args = (shared_spec, ctx_args(alice), team.id, "b")
    first = await anyio.to_thread.run_sync(workers.run_children, workers.read_and_ack, [(*args, 4)])
    second = await anyio.to_thread.run_sync(
        workers.run_children, workers.read_and_ack, [(*args, 100)]
    )
    assert first[0] + second[0] == sent and len(first[0]) == 4
    assert await client.unread(team.id, "b") == []
