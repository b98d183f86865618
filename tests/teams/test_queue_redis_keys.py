"""Every key a Redis script touches (the board queue's and the store's own) is one it declared
in KEYS.

Redis Cluster routes a script, and refuses it with ASK / TRYAGAIN while its slot migrates, by the
declared keys only; a record read under another name may be on the other node and look absent.
Here every script runs with each ``redis.call`` checked against KEYS (an undeclared key fails the
script), through every transition: claims that pass tasks by, blockers, prefer-own renewals,
expired leases reclaimed and reaped, listings, and a stale index entry cleaned.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import AgentScopeTeamsError
from agentscope_teams.store import StoreBackend
from agentscope_teams.store import _redis_scripts as redis_store
from agentscope_teams.store.redis import RedisStore
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues import redis as queue_redis
from agentscope_teams.teams.queues import redis_lua as lua

from ..backends import StoreSpec
from .board_paths import native_spec
from .conftest import FakeClock
from .round_trips import count_round_trips

pytestmark = pytest.mark.anyio

#: Prepended to a script whose ``redis.call`` became ``__checked``: a key not in KEYS is an error.
CHECK = r"""
local __declared = {}
for _, k in ipairs(KEYS) do __declared[k] = true end
local function __checked(cmd, key, ...)
  if not __declared[key] then error('undeclared key ' .. tostring(key) .. ' (' .. cmd .. ')') end
  return redis.call(cmd, key, ...)
end
"""


STORE_SCRIPTS = (
    "PUT",
    "UPDATE",
    "DELETE",
    "DELETE_FENCED",
    "EXISTS",
    "APPEND",
    "PUT_FENCED",
    "UPDATE_FENCED",
)


def checked(source: str) -> str:
    return CHECK + source.replace("redis.call(", "__checked(")


@pytest.fixture(params=["redis", "redis-cluster"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Any) -> StoreSpec:
    return native_spec(request, tmp_path)


@pytest.fixture
async def store(
    store_spec: StoreSpec, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[StoreBackend]:
    monkeypatch.setattr(queue_redis, "OPEN_STANDALONE", False)  # declare as on a cluster
    monkeypatch.setattr(queue_redis, "FUNCTIONS", False)  # the scripts (the functions' bodies)
    for name, source in lua.SCRIPTS.items():
        monkeypatch.setitem(lua.SCRIPTS, name, checked(source))
    for name in STORE_SCRIPTS:  # registered by each new RedisStore
        monkeypatch.setattr(redis_store, name, checked(getattr(redis_store, name)))
    monkeypatch.setattr(
        redis_store, "SCRIPTS", tuple(getattr(redis_store, n) for n in STORE_SCRIPTS)
    )
    async with store_spec.open() as s:
        yield s


def forget_hints() -> None:
    """Drop what this process knows of the boards: the next claim must ask for every record."""
    for teams in queue_redis._HINTS.values():
        for hints in teams.values():
            hints.head.clear()
            hints.recent.clear()


async def test_every_transition_touches_only_declared_keys(
    store: StoreBackend, client: LocalTeamClient, clock: FakeClock
) -> None:
    assert isinstance(store, RedisStore)
    team = await client.create_team("crew", members=[Member(name="a"), Member(name="b")])
    keys = TeamKeys(client.ctx.owner_scope(), team.id)
    board = TaskBoard(store, keys, clock, native=True)
    assert board.queue.native
    first = await board.create("lead", "first")
    after = await board.create("lead", "after", blocked_by=[first.id])
    for_b = await board.create("lead", "for b", assignee="b")
    rest = [await board.create("lead", f"rest {i}") for i in range(3)]

    forget_hints()
    got = await board.claim_next("a", 30)  # passes nothing: first is claimable
    assert got is not None and got.id == first.id
    forget_hints()
    got = await board.claim_next("b", 30)  # passes `after` (waiting on a blocker), takes for_b
    assert got is not None and got.id == for_b.id
    forget_hints()
    got = await board.claim_next("a", 30, prefer_own=True)  # renews its own
    assert got is not None and got.id == first.id
    with pytest.raises(AgentScopeTeamsError):
        await board.claim("b", after.id, 30)  # its blocker is not done
    await board.complete("a", first.id, "ok")
    forget_hints()
    got = await board.claim("a", after.id, 30)
    assert got.id == after.id
    await board.renew_lease("a", after.id, 60)
    await board.release("a", after.id)
    await board.cancel("lead", after.id, "not needed")

    short = await board.claim_next("a", 1)  # a lease that will lapse
    assert short is not None and short.id == rest[0].id
    clock.advance(5)
    forget_hints()
    got = await board.claim_next("b", 30)  # reclaims the expired one
    assert got is not None and got.id == rest[0].id
    lapsing = await board.claim_next("a", 1)
    assert lapsing is not None
    clock.advance(5)
    forget_hints()
    assert [t.id for t in await board.reap_expired()] == [lapsing.id]

    # a stale index entry (its record is gone, provably: the script declared it) is removed
    pending = store.redis_name(keys.open_prefix(), ":queue")
    async with store.commands() as redis:
        await redis.zadd(pending, {"t-999": 0})
    forget_hints()
    open_ids = {t.id for t in await board.open_tasks()}
    assert "t-999" not in open_ids
    got = await board.claim_next("a", 30)
    assert got is not None and got.status is TaskStatus.IN_PROGRESS
    async with store.commands() as redis:
        assert await redis.zscore(pending, "t-999") is None


async def test_a_claim_costs_one_round_trip_with_hints_and_two_without(
    store: StoreBackend, client: LocalTeamClient, clock: FakeClock
) -> None:
    """The count docs/redis-cluster.md states: a process that knows the pending head (from its
    last reply or its own enqueues) claims in one script call; one that does not, in two."""
    team = await client.create_team("crew", members=[Member(name="a")])
    board = TaskBoard(store, TeamKeys(client.ctx.owner_scope(), team.id), clock, native=True)
    for i in range(4):
        await board.create("lead", f"task {i}")
    assert await board.claim_next("a", 30) is not None  # loads the scripts
    async with count_round_trips(store) as counter:
        assert await board.claim_next("a", 30) is not None
    assert counter.seen == ["EVALSHA"]
    forget_hints()  # as a process that never enqueued or claimed on this board
    async with count_round_trips(store) as counter:
        assert await board.claim_next("a", 30) is not None
    assert counter.seen == ["EVALSHA", "EVALSHA"]
    async with count_round_trips(store) as counter:  # the reply named the next ones
        assert await board.claim_next("a", 30) is not None
    assert counter.seen == ["EVALSHA"]


async def test_a_standalone_claim_declares_no_record_and_needs_no_second_call(
    store_spec: StoreSpec, alice: RuntimeContext, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a standalone server a claim's KEYS are its four sets: a process that knows nothing of
    the board claims in one script call, passing tasks assigned to others and a blocked one."""
    if store_spec.backend != "redis":
        pytest.skip("a cluster declares every record")
    async with store_spec.open() as store:  # the scripts as shipped, not the checked ones
        assert isinstance(store, RedisStore)
        other = LocalTeamClient(store, alice, clock=clock)
        team = await other.create_team("crew", members=[Member(name="a"), Member(name="b")])
        board = TaskBoard(store, TeamKeys(other.ctx.owner_scope(), team.id), clock, native=True)
        first = await board.create("lead", "for b", assignee="b")
        await board.create("lead", "blocked", blocked_by=[first.id])
        free = await board.create("lead", "free")
        forget_hints()
        client_ = store._client  # type: ignore[attr-defined]
        sent: list[tuple[Any, ...]] = []
        original = client_.execute_command

        async def recorded(*args: Any, **options: Any) -> Any:
            sent.append(args)
            return await original(*args, **options)

        monkeypatch.setattr(client_, "execute_command", recorded)
        got = await board.claim_next("a", 30)
        assert got is not None and got.id == free.id
        assert [(a[0], a[2]) for a in sent if a[0] != "FUNCTION LOAD"] == [("FCALL", 4)]
        # its 4 sets and 6 arguments (now, standalone, member, lease, prefer own, offset): the
        # record names, the ISO time, the lease in ms and the scan limit are derived in the script
        (call,) = [a for a in sent if a[0] == "FCALL"]
        assert len(call) == 3 + 4 + 6


#: Prepended to a script whose ``redis.call`` became ``__counted``: each command's name is pushed
#: on the list ``<pending set>:calls`` (same hash slot) before it runs.
COUNT = r"""
local function __counted(cmd, ...)
  redis.call('RPUSH', KEYS[1] .. ':calls', cmd)
  return redis.call(cmd, ...)
end
"""


async def test_a_claim_script_runs_eight_commands(
    store_spec: StoreSpec, alice: RuntimeContext, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commands inside one claim of the pending head on a standalone server, pinned: read the
    expired leases and the pending head, read the record with its version, read the member's
    routed tasks ahead of it (none), then move the task between the indexes and write record and
    version in one HSET."""
    if store_spec.backend != "redis":
        pytest.skip("counted on a standalone server")
    monkeypatch.setattr(queue_redis, "FUNCTIONS", False)  # the script: the function's body
    monkeypatch.setitem(
        lua.SCRIPTS, "CLAIM_NEXT", COUNT + lua.CLAIM_NEXT.replace("redis.call(", "__counted(")
    )
    async with store_spec.open() as store:
        assert isinstance(store, RedisStore)
        client = LocalTeamClient(store, alice, clock=clock)
        team = await client.create_team("crew", members=[Member(name="a")])
        keys = TeamKeys(client.ctx.owner_scope(), team.id)
        board = TaskBoard(store, keys, clock, native=True)
        for i in range(3):
            await board.create("lead", f"task {i}")
        calls = store.redis_name(keys.open_prefix(), ":queue") + ":calls"
        for _ in range(2):
            got = await board.claim_next("a", 30)
            assert got is not None and got.status is TaskStatus.IN_PROGRESS
            async with store.commands() as redis:
                ran = [c.decode() for c in await redis.lrange(calls, 0, -1)]
                await redis.delete(calls)
            head = ["ZRANGEBYSCORE", "ZRANGE", "HMGET", "ZRANGEBYLEX"]
            assert ran == [*head, "ZREM", "ZADD", "ZADD", "HSET"]


async def test_reap_settles_every_expired_lease_batch_by_batch(
    store: StoreBackend,
    client: LocalTeamClient,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ten lapsed leases, one of them on an unreadable record, reaped 4 per script call: the
    unreadable one is passed by (left in place), the nine others all come back."""
    assert isinstance(store, RedisStore)
    monkeypatch.setattr(queue_redis, "REAP_BATCH", 4)
    team = await client.create_team("crew", members=[Member(name="a")])
    keys = TeamKeys(client.ctx.owner_scope(), team.id)
    board = TaskBoard(store, keys, clock, native=True)
    for i in range(10):
        await board.create("lead", f"task {i}")
    held = [await board.claim_next("a", 1) for _ in range(10)]
    assert all(t is not None for t in held)
    async with store.commands() as redis:  # the first one's record becomes unreadable
        await redis.hset(store.redis_name(keys.task("t-1")), "v", b"not json")
    clock.advance(5)
    forget_hints()
    reaped = await board.reap_expired()
    assert sorted(t.id for t in reaped) == sorted(f"t-{i}" for i in range(2, 11))
    assert all(t.status is TaskStatus.PENDING for t in reaped)
