"""The board's native queues (:mod:`agentscope_teams.teams.queues`): round trips counted, records
that stay the store's entries, the index rebuilt, and both paths writing the same records.

The scenarios of the claim rule run on both paths in ``test_board``; this module checks what only
a native queue has.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import TaskStateError, UnknownMemberError, UnknownTeamError
from agentscope_teams.store import StoreBackend
from agentscope_teams.store.base import signals_of
from agentscope_teams.teams import (
    LocalTeamClient,
    Member,
    MemberStatus,
    Task,
    TaskStatus,
    Team,
    TeamKeys,
)
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues.redis import RedisBoardQueue
from agentscope_teams.teams.queues.sql import SqlBoardQueue

from ..backends import StoreSpec
from .board_paths import NATIVE_BACKENDS, native_spec
from .conftest import FakeClock
from .round_trips import board_call, count_round_trips

pytestmark = pytest.mark.anyio


@pytest.fixture(params=NATIVE_BACKENDS)
def store_spec(request: pytest.FixtureRequest, tmp_path: Any) -> StoreSpec:
    return native_spec(request, tmp_path)


@pytest.fixture
async def store(store_spec: StoreSpec) -> AsyncIterator[StoreBackend]:
    async with store_spec.open() as s:
        yield s


async def crew(client: LocalTeamClient) -> tuple[str, TeamKeys]:
    team = await client.create_team("crew", members=[Member(name="a"), Member(name="b")])
    return team.id, TeamKeys(client.ctx.owner_scope(), team.id)


def native_board(client: LocalTeamClient, keys: TeamKeys) -> TaskBoard:
    board = TaskBoard(client.store, keys, client.clock, native=True)
    assert board.queue.native, "this backend should have a native queue"
    return board


#: Round trips of each board operation: Redis runs one script; PostgreSQL's claim is one
#: autocommit statement and its finish (complete, fail: the row, the record and the dependents'
#: counters) one too, then the team's wake-up (``pg_notify``, its own statement: a notifying
#: transaction commits alone), its other named transitions a transaction (BEGIN, the locked read,
#: the record and row updates, COMMIT); MariaDB's is a
#: transaction begun implicitly by the locked read, then one packet with the multi-table UPDATE
#: (and a finish's dependents' counters) and the COMMIT.
_ONE_SCRIPT = dict.fromkeys(
    ("claim_next", "claim", "renew", "complete", "fail", "release", "prefer_own"), 1
)
ROUND_TRIPS = {
    "redis": _ONE_SCRIPT,
    "redis-cluster": _ONE_SCRIPT,
    "postgres": {
        "claim_next": 1,
        "claim": 5,
        "renew": 5,
        "complete": 2,
        "fail": 2,
        "release": 5,
        "prefer_own": 1,
    },
    # a transition of a task whose record the queue wrote last (claimed or renewed): one packet
    "mariadb": {
        "claim_next": 2,
        "claim": 2,
        "renew": 1,
        "complete": 1,
        "fail": 1,
        "release": 1,
        "prefer_own": 2,
    },
}


async def test_round_trips_per_transition(
    store_spec: StoreSpec, store: StoreBackend, client: LocalTeamClient
) -> None:
    _, keys = await crew(client)
    board = native_board(client, keys)
    for i in range(4):
        await board.create("lead", f"task {i}")
    await board.claim_next("a", 30)  # loads the scripts (a first call may add a load)
    ops: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("claim_next", lambda: board.claim_next("a", 30)),
        ("prefer_own", lambda: board.claim_next("a", 30, prefer_own=True)),  # renews t-1
        ("claim", lambda: board.claim("b", "t-3", 30)),
        ("renew", lambda: board.renew_lease("a", "t-2", 60)),
        ("complete", lambda: board.complete("a", "t-2", "done")),
        ("fail", lambda: board.fail("b", "t-3", "broke")),
        ("release", lambda: board.release("a", "t-1")),
    ]
    expected = ROUND_TRIPS[store_spec.backend]
    for name, op in ops:
        async with count_round_trips(store) as counter:
            assert await op() is not None
        assert counter.count == expected[name], (name, counter.seen)


async def test_a_sql_claim_and_completion_borrow_no_connection_from_the_pool(
    store_spec: StoreSpec, store: StoreBackend, client: LocalTeamClient
) -> None:
    """The SQL queues' claim and finish run on a connection their store kept from its previous
    driver call (:mod:`agentscope_teams.store.sql.spare`): after the first, no pool checkout."""
    if store_spec.backend not in ("postgres", "mariadb"):
        pytest.skip("SQL stores only")
    from sqlalchemy import event

    _, keys = await crew(client)
    board = native_board(client, keys)
    for i in range(4):
        await board.create("lead", f"task {i}")
    await board.complete("a", (await board.claim_next("a", 30)).id, "ok")  # type: ignore[union-attr]
    seen: list[int] = []
    event.listen(store._engine.sync_engine, "checkout", lambda *_: seen.append(1))  # type: ignore[attr-defined]
    for _ in range(3):
        task = await board.claim_next("a", 30)
        assert task is not None
        await board.complete("a", task.id, "ok")
    assert seen == []


async def test_claim_cost_does_not_grow_with_held_tasks(
    store_spec: StoreSpec, store: StoreBackend, client: LocalTeamClient
) -> None:
    _, keys = await crew(client)
    board = native_board(client, keys)
    for i in range(300):
        await board.create("lead", f"held {i}")
    for _ in range(300):
        assert await board.claim_next("a", 600) is not None
    last = await board.create("lead", "the free one")
    async with count_round_trips(store) as counter:
        claimed = await board.claim_next("b", 30)
    assert claimed is not None and claimed.id == last.id
    assert counter.count == ROUND_TRIPS[store_spec.backend]["claim_next"]
    assert [t.id for t in await board.open_tasks() if t.status is TaskStatus.PENDING] == []


async def test_every_write_is_the_store_record_with_version_plus_one(
    client: LocalTeamClient,
) -> None:
    _, keys = await crew(client)
    board = native_board(client, keys)
    task = await board.create("lead", "versioned")

    async def stored(expected: Task) -> None:
        entry = await client.store.get(keys.task(expected.id))
        assert entry is not None
        assert Task.from_bytes(entry.value, entry.version) == expected

    await stored(task)
    steps = [
        lambda: board.claim("a", task.id, 30),
        lambda: board.renew_lease("a", task.id, None),
        lambda: board.release("a", task.id),
        lambda: board.claim_next("b", 30),
        lambda: board.complete("b", task.id, "ok"),
    ]
    version = task.version
    for step in steps:
        written = await step()
        assert written is not None and written.version == version + 1
        await stored(written)
        version = written.version
    # an idempotent repeat writes nothing
    again = await board.complete("b", task.id, "ok")
    assert again.version == version


async def test_a_lost_index_is_rebuilt_from_the_records(
    client: LocalTeamClient, clock: FakeClock
) -> None:
    _, keys = await crew(client)
    board = native_board(client, keys)
    first = await board.create("lead", "held")
    second = await board.create("lead", "pending")
    await board.claim("a", first.id, 10)
    await board.queue.drop()
    assert await board.claim_next("b", 10) is None
    assert await board.rebuild_index() == 2
    clock.advance(2)  # b's lease ends after a's: which expired lease comes first is not a tie
    claimed = await board.claim_next("b", 10)
    assert claimed is not None and claimed.id == second.id
    clock.advance(9)  # a's lease ran out (b's has 1 s left): found again through the held index
    reclaimed = await board.claim_next("b", 10)
    assert reclaimed is not None and (reclaimed.id, reclaimed.attempts) == (first.id, 2)


async def test_deleting_the_team_drops_its_queue(
    store: StoreBackend, client: LocalTeamClient
) -> None:
    team_id, keys = await crew(client)
    board = native_board(client, keys)
    await board.create("lead", "one")
    await board.claim_next("a", 30)
    await board.create("lead", "two")
    assert await index_size(board) == 2
    await client.delete_team(team_id)
    assert await index_size(board) == 0


async def index_size(board: TaskBoard) -> int:
    """How many entries the board's native index holds (whatever their records)."""
    queue: Any = board.queue
    if isinstance(queue, RedisBoardQueue):
        client = queue.store._client
        return sum([await client.zcard(name) for name in queue._keys[:2]])
    if isinstance(queue, SqlBoardQueue):
        return await queue.size()
    raise TypeError(f"no index size for {type(queue).__name__}")


async def scenario(client: LocalTeamClient, team_id: str, clock: FakeClock) -> list[Task]:
    """Every kind of transition, in a fixed order, on one board; returns the final records."""
    t = [await client.assign_task(team_id, f"t{i}", max_attempts=2) for i in range(4)]
    routed = await client.assign_task(team_id, "for b", assignee="b")
    after = await client.assign_task(team_id, "after t0", blocked_by=[t[0].id])
    doomed = await client.assign_task(team_id, "after t1", blocked_by=[t[1].id])
    assert (await client.claim_task(team_id, "a", task_lease=5)).id == t[0].id  # type: ignore[union-attr]
    await client.claim_task(team_id, "a", t[1].id, task_lease=5)
    await client.fail_task(team_id, "a", t[1].id, "no")
    with pytest.raises(TaskStateError, match="blocked by failed task"):
        await client.claim_task(team_id, "b", doomed.id)
    clock.advance(6)  # a's lease on t0 ran out: b takes it over
    assert (await client.claim_task(team_id, "b", task_lease=5)).id == t[0].id  # type: ignore[union-attr]
    await client.complete_task(team_id, "b", t[0].id, "done")
    assert (await client.claim_task(team_id, "a", task_lease=5)).id == t[2].id  # type: ignore[union-attr]
    await client.release_task(team_id, "a", t[2].id)
    assert (await client.claim_task(team_id, "a", task_lease=5)).id == t[2].id  # type: ignore[union-attr]
    await client.cancel_task(team_id, t[3].id, reason="not needed")
    got = await client.claim_task(team_id, "a", task_lease=5)
    assert got is not None and got.id == after.id
    assert (await client.claim_task(team_id, "b", task_lease=5)).id == routed.id  # type: ignore[union-attr]
    clock.advance(6)
    await client.reap_expired(team_id)
    return list(await client.list_tasks(team_id))


def comparable(task: Task) -> dict[str, Any]:
    """A record without what depends on when it was written."""
    data = task.model_dump(exclude={"created_at", "updated_at", "lease_expires_at"})
    data["history"] = [(e["actor"], e["action"], e["detail"]) for e in data["history"]]
    data["id"] = task.seq
    data["blocked_by"] = len(task.blocked_by)
    data["leased"] = task.lease_expires_at is not None
    return data


async def test_both_paths_write_the_same_records(
    store: StoreBackend, alice: RuntimeContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    finals = {}
    for path in ("native", "generic"):
        clock = FakeClock()
        monkeypatch.setenv("AGENTSCOPE_TEAMS_BOARD_NATIVE", "1" if path == "native" else "0")
        client = LocalTeamClient(store, alice, task_lease=30, clock=clock)
        team_id, keys = await crew(client)
        assert TaskBoard(store, keys).queue.native == (path == "native")
        finals[path] = [comparable(t) for t in await scenario(client, team_id, clock)]
    assert finals["native"] == finals["generic"]
    statuses = [d["status"] for d in finals["native"]]
    assert statuses == [
        TaskStatus.COMPLETED,
        TaskStatus.FAILED,
        TaskStatus.FAILED,  # its second lease ran out at the end: reaped, every attempt used
        TaskStatus.CANCELLED,
        TaskStatus.PENDING,
        TaskStatus.PENDING,
        TaskStatus.PENDING,
    ]


async def test_a_claim_passes_tasks_routed_to_others(client: LocalTeamClient) -> None:
    """300 pending tasks for ``b`` ahead of one for anyone: ``a`` gets that one (on Redis the
    script passes 256 at a time, so this crosses a second call), ``b`` still gets its own."""
    _, keys = await crew(client)
    board = native_board(client, keys)
    for i in range(300):
        await board.create("lead", f"for b {i}", assignee="b")
    free = await board.create("lead", "for anyone")
    claimed = await board.claim_next("a", 30)
    assert claimed is not None and claimed.id == free.id
    assert await board.claim_next("a", 30) is None
    mine = await board.claim_next("b", 30)
    assert mine is not None and (mine.seq, mine.assignee) == (1, "b")


async def test_a_claim_takes_free_and_own_routed_tasks_in_order(client: LocalTeamClient) -> None:
    """Free tasks and tasks routed to ``a`` interleaved with tasks routed to ``b``: ``a``'s claims
    take the free and its own in ``seq`` order (the two are read through indexes of their own
    on SQL), never ``b``'s, and ``b`` takes its own once the free ones are gone."""
    _, keys = await crew(client)
    board = native_board(client, keys)
    plan = [None, "a", "b", None, "b", "a", "a", None, "b"]
    made = [await board.create("lead", f"task {i}", assignee=who) for i, who in enumerate(plan)]
    taken = []
    while (task := await board.claim_next("a", 30)) is not None:
        taken.append(task.id)
    assert taken == [t.id for t, who in zip(made, plan, strict=True) if who in (None, "a")]
    theirs = []
    while (task := await board.claim_next("b", 30)) is not None:
        theirs.append(task.id)
    assert theirs == [t.id for t, who in zip(made, plan, strict=True) if who == "b"]


async def test_racing_completions_write_once_and_free_the_dependent_once(
    client: LocalTeamClient,
) -> None:
    """Eight concurrent completions of one task by its owner: one writes (version + 1, one
    "completed" event), the others are repeats; the dependent's blocker count drops once."""
    _, keys = await crew(client)
    board = native_board(client, keys)
    first = await board.create("lead", "first")
    after = await board.create("lead", "after", blocked_by=[first.id])
    also = await board.create("lead", "also after", blocked_by=[first.id, after.id])
    claimed = await board.claim_next("a", 30)
    assert claimed is not None and claimed.id == first.id
    done = await anyio_gather([lambda: board.complete("a", first.id, "ok") for _ in range(8)])
    assert {t.version for t in done} == {claimed.version + 1}
    entry = await client.store.get(keys.task(first.id))
    assert entry is not None and entry.version == claimed.version + 1
    stored = Task.from_bytes(entry.value, entry.version)
    assert [e.action for e in stored.history].count("completed") == 1
    nxt = await board.claim_next("b", 30)
    assert nxt is not None and nxt.id == after.id
    assert await board.claim_next("b", 30) is None  # "also after" still waits on "after"
    await board.complete("b", after.id, "ok")
    last = await board.claim_next("b", 30)
    assert last is not None and last.id == also.id


async def anyio_gather(calls: list[Callable[[], Awaitable[Task]]]) -> list[Task]:
    out: list[Task] = []

    async def one(call: Callable[[], Awaitable[Task]]) -> None:
        out.append(await call())

    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(one, call)
    return out


async def test_a_member_claims_in_one_statement_and_completes_in_one_plus_its_wake_up_on_postgres(
    store_spec: StoreSpec, store: StoreBackend, client: LocalTeamClient
) -> None:
    """Through the team client: once it has read the team record, PostgreSQL's claim and
    completion check it inside their one statement (no read of the record per call). A
    completion then wakes the team's waiters (one ``pg_notify`` of its own, after the commit)."""
    if store_spec.backend != "postgres":
        pytest.skip("the team guard is PostgreSQL's")
    team_id, _ = await crew(client)
    for i in range(3):
        await client.assign_task(team_id, f"task {i}")
    first = await client.claim_task(team_id, "a")  # reads the team record once
    assert first is not None
    async with count_round_trips(store) as counter:
        await client.complete_task(team_id, "a", first.id, "done")
    assert counter.seen == ["WITH", "NOTIFY"]
    async with count_round_trips(store) as counter:
        claimed = await client.claim_task(team_id, "b")
    assert claimed is not None and claimed.id == "t-2" and counter.seen == ["WITH"]
    async with count_round_trips(store) as counter:  # the claimTask tool: its own task first
        again = await client.claim_task(team_id, "b", prefer_own=True)
    assert again is not None and again.id == claimed.id and counter.seen == ["WITH"]
    assert again.attempts == claimed.attempts and again.version == claimed.version + 1
    async with count_round_trips(store) as counter:
        await client.fail_task(team_id, "b", claimed.id, "broke")
    assert counter.seen == ["WITH", "NOTIFY"]


async def test_a_team_changed_elsewhere_is_seen_by_the_next_claim_and_completion(
    store: StoreBackend, alice: RuntimeContext, client: LocalTeamClient
) -> None:
    """Another client removes a member, then deletes the team: this client, which read the
    team record before, refuses the removed member and then the deleted team, as it did when it
    read the record on every call."""
    team_id, _ = await crew(client)
    for i in range(4):
        await client.assign_task(team_id, f"task {i}")
    a_task = await client.claim_task(team_id, "a")
    b_task = await client.claim_task(team_id, "b")
    assert a_task is not None and b_task is not None
    other = LocalTeamClient(store, alice, task_lease=30.0, clock=client.clock)

    def without_b(team: Team) -> Team:
        return team.model_copy(update={"members": [m for m in team.members if m.name != "b"]})

    await other._update_team(team_id, without_b)
    with pytest.raises(UnknownMemberError):
        await client.complete_task(team_id, "b", b_task.id, "done")
    with pytest.raises(UnknownMemberError):
        await client.claim_task(team_id, "b")
    assert (
        await client.complete_task(team_id, "a", a_task.id, "ok")
    ).status is TaskStatus.COMPLETED
    again = await client.claim_task(team_id, "a")
    assert again is not None
    await other.delete_team(team_id)
    with pytest.raises(UnknownTeamError):
        await client.complete_task(team_id, "a", again.id, "done")
    with pytest.raises(UnknownTeamError):
        await client.claim_task(team_id, "a")


async def test_a_postgres_completion_wakes_the_team_with_one_notify_after_it(
    store_spec: StoreSpec, store: StoreBackend, client: LocalTeamClient
) -> None:
    """The completion's statement is followed by one ``pg_notify`` of the team's channel: a
    waiter wakes, and nothing else is sent (the client sends no signal of its own)."""
    if store_spec.backend != "postgres":
        pytest.skip("the board's own wake-up is PostgreSQL's")
    team_id, keys = await crew(client)
    await client.assign_task(team_id, "task")
    claimed = await client.claim_task(team_id, "a")
    assert claimed is not None
    signals = signals_of(store)
    assert signals is not None
    channel = keys.signal()
    assert not await signals.wait_signal([channel], 0.05)  # listening from now on
    woke: list[bool] = []

    async def wait() -> None:
        woke.append(await signals.wait_signal([channel], 10.0))  # a guard, not a latency bound

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait)
        await anyio.sleep(0.1)
        async with count_round_trips(store) as counter:
            await client.complete_task(team_id, "a", claimed.id, "done")
    assert woke == [True] and counter.seen == ["WITH", "NOTIFY"]


async def test_a_member_claims_its_own_first_and_completes_in_one_command_each_on_redis(
    store_spec: StoreSpec, store: StoreBackend, client: LocalTeamClient
) -> None:
    """The model's ``claimTask`` claims with ``prefer_own``: on Redis the script checks the team
    record's version and the member's own tasks in the same call, so once the client has read
    the record a claim is one command, and a completion one command plus its wake-up signal."""
    if not store_spec.backend.startswith("redis"):
        pytest.skip("the prefer_own guard is Redis's")
    team_id, _ = await crew(client)
    for i in range(3):
        await client.assign_task(team_id, f"task {i}")
    first = await client.claim_task(team_id, "a", prefer_own=True)  # reads the team record once
    assert first is not None
    async with count_round_trips(store) as counter:
        again = await client.claim_task(team_id, "a", prefer_own=True)  # its own, renewed
    assert again is not None and again.id == first.id and again.attempts == 1
    script = board_call(store)
    assert script == ("EVALSHA" if store_spec.backend == "redis-cluster" else "FCALL")
    assert counter.seen == [script]
    async with count_round_trips(store) as counter:
        await client.complete_task(team_id, "a", first.id, "done")
    assert counter.seen == [script, "PUBLISH"]
    await client.set_member_status(team_id, "b", MemberStatus.RUNNING)  # the record moves on
    async with count_round_trips(store) as counter:  # ... as this client wrote it: still known
        claimed = await client.claim_task(team_id, "b", prefer_own=True)
    assert claimed is not None and claimed.id == "t-2" and counter.seen == [script]
