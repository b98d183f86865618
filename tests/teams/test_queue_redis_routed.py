"""The Redis claim with tasks routed to other members (issue 26.1): they sit in the routed set,
outside the claimer's range, so a claim is one script call that reads a few records whatever
their number; a board written by the previous release (routed tasks in the pending set) is moved
over by the claims that meet them, and entries the previous release's scripts leave behind are
dropped as stale.

Commands are counted by a private ``redis-server`` (``INFO commandstats`` counts the commands a
script runs).
"""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store.redis import RedisStore
from agentscope_teams.teams import LocalTeamClient, Member, TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues import redis as queue_redis
from agentscope_teams.teams.queues.redis import RedisBoardQueue

from ..usage.test_riders import private  # noqa: F401  (the private redis-server fixture)

pytestmark = pytest.mark.anyio
#: Tasks routed to another member ahead of the free one a claim takes.
ROUTED = 300
#: Record reads of one claim, at most (the task it takes, a stale entry or two).
READS = 6


async def _commands(client: Any) -> dict[str, int]:
    stats = await client.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


async def _counted(store: RedisStore, board: TaskBoard, member: str) -> tuple[Any, dict[str, int]]:
    """``member``'s claim and the commands the server ran for it (scripts' commands included)."""
    before = await _commands(store.client)
    task = await board.claim_next(member, 60)
    after = await _commands(store.client)
    ran = {k: n - before.get(k, 0) for k, n in after.items() if k != "info"}
    return task, {k: n for k, n in ran.items() if n}


def _calls(ran: dict[str, int]) -> int:
    return sum(n for k, n in ran.items() if k in ("fcall", "evalsha", "eval", "function|load"))


def _reads(ran: dict[str, int]) -> int:
    return ran.get("hmget", 0) + ran.get("hget", 0)


async def _routed_board(store: RedisStore) -> TaskBoard:
    """:data:`ROUTED` tasks routed to ``b``, then a free one, then one routed to ``a``."""
    client = LocalTeamClient(store, RuntimeContext(session_id="s", user_id="routed"))
    team = await client.create_team("crew", members=[Member(name="a"), Member(name="b")])
    board = TaskBoard(store, TeamKeys(client.ctx.owner_scope(), team.id), native=True)
    for i in range(ROUTED):
        await board.create("lead", f"for b {i}", assignee="b")
    assert await board.claim_next("a", 60) is None  # the library loaded: not counted below
    await board.create("lead", "for anyone")
    await board.create("lead", "for a", assignee="a")
    return board


async def _claims_cheaply(store: RedisStore, board: TaskBoard, member: str, title: str) -> None:
    """``member``'s next claim takes the task ``title`` in one script call reading a few records."""
    task, ran = await _counted(store, board, member)
    assert task is not None and task.title == title
    assert _calls(ran) == 1 and _reads(ran) <= READS, ran


async def test_a_claim_reads_a_few_records_with_many_tasks_routed_to_others(private: str) -> None:  # noqa: F811
    """300 pending tasks routed to ``b`` ahead of a free one: ``a``'s claim is one script call
    that reads a few records (it read all 300, in two calls, before the routed tasks had a set
    of their own), and takes the free one, then its own."""
    async with RedisStore(private) as store:
        board = await _routed_board(store)
        await _claims_cheaply(store, board, "a", "for anyone")
        await _claims_cheaply(store, board, "a", "for a")
        mine = await board.claim_next("b", 60)
        assert mine is not None and mine.title == "for b 0"


async def test_a_board_of_the_previous_release_is_moved_over_by_claims(private: str) -> None:  # noqa: F811
    """The routed tasks in the pending set (as the previous release kept them) and a routed-set
    entry whose task the previous release's scripts finished: the first claims pass them by,
    moving them to the routed set and dropping the stale entry; the next claims read a few
    records, and ``b`` still gets its tasks in order."""
    async with RedisStore(private) as store:
        board = await _routed_board(store)
        queue = board.queue
        assert isinstance(queue, RedisBoardQueue)
        pending, _, _, routed = queue._keys
        entries = await store.client.zrange(routed, 0, -1)
        old = [e for e in entries if e.startswith(b"b\0")]
        async with store.client.pipeline(transaction=True) as pipe:  # the previous layout
            pipe.zrem(routed, *old)
            pipe.zadd(pending, {e.split(b"\0")[2]: int(e.split(b"\0")[1]) for e in old})
            pipe.zadd(routed, {b"a\x0000000000000000000000\x00t-0": 0})  # a task long gone
            await pipe.execute()
        await board.create("lead", "another for anyone")
        first = await board.claim_next("a", 60)
        assert first is not None and first.title == "for anyone"
        assert await store.client.zcard(pending) == 1  # the free one left; the routed moved
        assert await store.client.zscore(routed, b"a\x0000000000000000000000\x00t-0") is None
        await _claims_cheaply(store, board, "a", "for a")
        await _claims_cheaply(store, board, "a", "another for anyone")
        mine = [await board.claim_next("b", 60) for _ in range(3)]
        assert [t.title for t in mine if t is not None] == ["for b 0", "for b 1", "for b 2"]


async def test_rebuilding_the_index_puts_routed_tasks_in_the_routed_set(private: str) -> None:  # noqa: F811
    """``rebuild_index`` on a board of the previous layout: the routed pending tasks go to the
    routed set at once, and a claim reads a few records."""
    async with RedisStore(private) as store:
        board = await _routed_board(store)
        queue = board.queue
        assert isinstance(queue, RedisBoardQueue)
        routed = queue._keys[3]
        await store.client.delete(routed)
        await board.rebuild_index()
        assert await store.client.zcard(routed) == ROUTED + 1
        await _claims_cheaply(store, board, "a", "for anyone")


async def test_a_claim_passes_many_waiting_routed_tasks_declaring_as_on_a_cluster(
    private: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """:data:`ROUTED` tasks routed to ``a`` wait on a held task, then a free one: a process that
    knows none of them (declaring records as on a cluster) claims the free one, as it did when
    the routed tasks were in the pending set."""
    monkeypatch.setattr(queue_redis, "OPEN_STANDALONE", False)
    async with RedisStore(private) as store:
        client = LocalTeamClient(store, RuntimeContext(session_id="s", user_id="waiting"))
        team = await client.create_team("crew", members=[Member(name="a"), Member(name="b")])
        keys = TeamKeys(client.ctx.owner_scope(), team.id)
        board = TaskBoard(store, keys, native=True)
        blocker = await board.create("lead", "first")
        assert await board.claim_next("b", 60) is not None
        for i in range(ROUTED):
            await board.create("lead", f"for a {i}", assignee="a", blocked_by=[blocker.id])
        await board.create("lead", "for anyone")
    async with RedisStore(private) as other:  # another process: no hints
        task = await TaskBoard(other, keys, native=True).claim_next("a", 60)
        assert task is not None and task.title == "for anyone"
