"""Redis Cluster slot migration under load: a team's slot moves to another primary while claimers
drain its board, its keys migrated in an adverse order (the queue's index sets before the task
records, or the records before the index sets). No task may be stranded: all of them are claimed
exactly once, and ``claim_next`` never answers "nothing to claim" while a task is pending.

The cluster is this module's own (a half-moved slot would disturb the other tests).
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest

pytest.importorskip("redis")

from redis.crc import key_slot

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import StoreUnavailableError
from agentscope_teams.store.redis import RedisStore
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, TeamKeys
from agentscope_teams.teams.board import TaskBoard

from .._redis_cluster import LocalCluster, SlotMove
from ..backends import unique_namespace
from ..conftest import start_cluster

pytestmark = pytest.mark.anyio

TASKS, CLAIMERS, BATCH, KEPT = 200, 8, 60, 2
#: The queue's index sets and the store's listing indexes (every other key is a record).
INDEX_SUFFIXES = (b":queue", b":owners", b":idx")


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("migration-cluster"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
async def stores(own_cluster: LocalCluster) -> AsyncIterator[tuple[RedisStore, RedisStore]]:
    namespace = unique_namespace()
    async with (
        RedisStore(own_cluster.url, namespace=namespace) as a,
        RedisStore(own_cluster.url, namespace=namespace) as b,
    ):
        yield a, b


def _batches(move: SlotMove, first: str) -> list[list[bytes]]:
    """The slot's keys in the order they move: the ``first`` group ('index' or 'records') before
    the other, in batches."""
    keys = move.keys()
    index = [k for k in keys if k.endswith(INDEX_SUFFIXES)]
    # oldest task first (t-9 before t-10): the records the claimers are about to read move first
    records = sorted((k for k in keys if not k.endswith(INDEX_SUFFIXES)), key=lambda k: (len(k), k))
    groups = [index, records] if first == "index" else [records, index]
    return [g[i : i + BATCH] for g in groups for i in range(0, len(g), BATCH)]


def _move_rest(move: SlotMove, batches: list[list[bytes]]) -> None:
    """Migrate ``batches`` then hand the slot to the target (in a thread, while claimers work)."""
    for batch in batches:
        time.sleep(0.05)  # pacing only: the claimers meet each half-moved state
        move.migrate(batch)
    move.migrate(move.keys())  # anything written meanwhile
    move.finish()


@pytest.mark.parametrize("first", ["index", "records"])
async def test_a_slot_moved_under_load_strands_no_task(
    own_cluster: LocalCluster, stores: tuple[RedisStore, RedisStore], first: str
) -> None:
    a, b = stores
    ctx = RuntimeContext(session_id="s-lead", user_id="alice", org_id=unique_namespace())
    names = [f"m{i}" for i in range(CLAIMERS)]
    client = LocalTeamClient(a, ctx)
    members = [Member(name=n) for n in [*names, "keeper"]]
    team = await client.create_team("movers", members=members)
    keys = TeamKeys(ctx.owner_scope(), team.id)
    boards = [TaskBoard(s, keys, client.clock, native=True) for s in (a, b)]
    ids = [(await boards[0].create("lead", f"job {i}")).id for i in range(TASKS)]

    slot = key_slot(a.redis_name(keys.team()).encode())
    source = a._client.get_node_from_key(a.redis_name(keys.team())).port
    target = next(p for p in own_cluster.primaries() if p != source)
    move = SlotMove(slot, source, target, own_cluster.ports)

    ticks = itertools.count()  # orders claim starts against "nothing to claim" answers
    claimed: list[tuple[int, str]] = []  # (tick at the claim's start, task id)
    kept = [await boards[0].claim_next("keeper", 60) for _ in range(KEPT)]  # long-running tasks:
    claimed += [(next(ticks), t.id) for t in kept if t is not None]  # the held set is not empty
    nothing_at: list[int] = []  # tick after each None came back
    moved = anyio.Event()

    unavailable: list[str] = []  # StoreUnavailableError seen (retried, as a worker would)

    async def claimer(i: int) -> None:
        board, member = boards[i % 2], names[i]
        while len(claimed) < TASKS:
            start = next(ticks)
            try:
                task = await board.claim_next(member, 60)
            except StoreUnavailableError as exc:
                unavailable.append(str(exc))
                await anyio.sleep(0.02)
                continue
            if task is None:
                nothing_at.append(next(ticks))
                if moved.is_set():
                    return  # the slot has settled and still nothing: stranded tasks, if any
                await anyio.sleep(0.02)
                continue
            claimed.append((start, task.id))
            while True:
                try:
                    await board.complete(member, task.id, "done")
                    break
                except StoreUnavailableError as exc:
                    unavailable.append(str(exc))
                    await anyio.sleep(0.02)

    move.begin()
    batches = _batches(move, first)
    move.migrate(batches[0])  # the claimers start on a half-moved slot
    try:
        with anyio.fail_after(45):
            async with anyio.create_task_group() as tg:
                for i in range(CLAIMERS):
                    tg.start_soon(claimer, i)
                await anyio.to_thread.run_sync(_move_rest, move, batches[1:])
                moved.set()
                for t in kept:
                    assert t is not None
                    await boards[0].complete("keeper", t.id, "done")
    finally:  # never leave the module's cluster with a half-moved slot
        if not moved.is_set():
            _move_rest(move, [])

    assert Counter(task_id for _, task_id in claimed) == Counter(ids)  # none stranded, none twice
    last_none = max(nothing_at, default=-1)
    late = [task_id for start, task_id in claimed if start > min(nothing_at, default=10**9)]
    assert not late, f"claim_next said 'nothing' before {late} were claimed (last {last_none})"
    for task in await client.list_tasks(team.id):
        assert task.status is TaskStatus.COMPLETED
    assert unavailable == [], "a moving slot is waited out, not reported as an outage"
