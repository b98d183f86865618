"""The generic path's task indexes on every backend: paged listings, held tasks out of the pending
index, expired leases found by expiry, and boards written before the split. (A native queue keeps
its own index: ``test_board_native``.)"""

from __future__ import annotations

from typing import Any, cast

import pytest

from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, Team, TeamKeys
from agentscope_teams.teams.board import TaskBoard

from .board_paths import generic_path  # noqa: F401 (the generic path of every backend)
from .conftest import FakeClock
from .helpers import CountingStore

pytestmark = pytest.mark.anyio


async def make_team(client: LocalTeamClient) -> Team:
    return await client.create_team("crew", members=[Member(name="a"), Member(name="b")])


async def setup(client: LocalTeamClient) -> tuple[str, TeamKeys, TaskBoard]:
    team = await client.create_team("crew", members=[Member(name="a"), Member(name="b")])
    keys = TeamKeys(client.ctx.owner_scope(), team.id)
    return team.id, keys, TaskBoard(client.store, keys, client.clock)


async def ids(client: LocalTeamClient, keys: TeamKeys, prefix: tuple[str, ...]) -> list[str]:
    return [keys.task_id_of(k) for k in await client.store.list_keys(prefix)]


async def test_paged_listing_equals_reading_each_task(client: LocalTeamClient) -> None:
    team_id, _, board = await setup(client)
    tasks = [await client.assign_task(team_id, f"t{i}") for i in range(12)]
    await client.assign_task(team_id, "waits", blocked_by=[tasks[0].id, tasks[5].id])
    for t in tasks[:4]:
        await client.claim_task(team_id, "a", t.id)
    await client.complete_task(team_id, "a", tasks[0].id, "ok")
    await client.fail_task(team_id, "a", tasks[1].id, "no")
    await client.cancel_task(team_id, tasks[6].id, reason="dropped")
    listed = await client.list_tasks(team_id)
    one_by_one = [await board.get(f"t-{seq}") for seq in range(1, 14)]
    assert listed == one_by_one
    assert [t.id for t in await client.list_tasks(team_id, TaskStatus.IN_PROGRESS)] == [
        tasks[2].id,
        tasks[3].id,
    ]
    open_ = await board.open_board()
    assert [t.id for t in open_] == [t.id for t in one_by_one if not t.status.finished] + ["t-1"]


async def test_every_transition_keeps_the_indexes_in_step(
    client: LocalTeamClient, clock: FakeClock
) -> None:
    team_id, keys, board = await setup(client)
    one, two = [await client.assign_task(team_id, n) for n in ("one", "two")]
    assert await ids(client, keys, keys.open_prefix()) == [one.id, two.id]
    await client.claim_task(team_id, "a", one.id)
    assert await ids(client, keys, keys.open_prefix()) == [two.id]
    assert await ids(client, keys, keys.held_prefix()) == [one.id]
    assert await ids(client, keys, keys.owned_prefix("a")) == [one.id]
    await client.release_task(team_id, "a", one.id)
    assert await ids(client, keys, keys.open_prefix()) == [one.id, two.id]
    assert (
        await ids(client, keys, keys.held_prefix())
        == await ids(client, keys, keys.owned_prefix("a"))
        == []
    )
    await client.claim_task(team_id, "b", two.id)
    clock.advance(31)  # b's lease (30 s) ran out: a claim finds it by expiry first
    again = await client.claim_task(team_id, "a")
    assert again is not None and (again.id, again.attempts) == (two.id, 2)
    assert await ids(client, keys, keys.held_prefix()) == [two.id]
    assert await ids(client, keys, keys.owned_prefix("b")) == []
    await client.complete_task(team_id, "a", two.id, "done")
    await client.cancel_task(team_id, one.id)
    for prefix in (keys.open_prefix(), keys.held_prefix(), keys.owned_prefix("a")):
        assert await ids(client, keys, prefix) == []
    assert await board.rebuild_index() == 0


async def test_a_board_written_before_the_split_keeps_working(
    client: LocalTeamClient, clock: FakeClock
) -> None:
    """An older board listed in-progress tasks in the one "open" index, and had no other index."""
    team_id, keys, board = await setup(client)
    tasks = [await client.assign_task(team_id, f"t{i}") for i in range(3)]
    for t in tasks[:2]:
        held = await client.claim_task(team_id, "a", t.id)
        await client.store.put(keys.open(held), held.id.encode())  # the old layout
        for key in await client.store.list_keys(keys.held_prefix()):
            await client.store.delete(key)
        await client.store.delete(keys.owned("a", held))
    assert [t.id for t in await board.open_tasks()] == [t.id for t in tasks]

    got = await client.claim_task(team_id, "b")  # moves the held ones out on its way
    assert got is not None and got.id == tasks[2].id
    assert await ids(client, keys, keys.open_prefix()) == []
    assert await ids(client, keys, keys.held_prefix()) == [tasks[0].id, tasks[1].id, tasks[2].id]
    mine = await client.claim_task(team_id, "a", prefer_own=True)
    assert mine is not None and (mine.id, mine.attempts) == (tasks[0].id, 1)  # renewed, not new

    await client.store.put(keys.open(tasks[1]), tasks[1].id.encode())  # old layout again
    assert await board.rebuild_index() == 3
    assert await ids(client, keys, keys.open_prefix()) == []
    clock.advance(31)
    reclaimed = await client.claim_task(team_id, "b")
    assert reclaimed is not None and reclaimed.attempts == 2


async def test_a_stale_read_never_loses_a_pending_entry(client: LocalTeamClient) -> None:
    """Repairing an entry from a stale read (the task was released meanwhile) keeps the entry."""
    team_id, keys, board = await setup(client)
    task = await client.assign_task(team_id, "x")
    stale = await client.claim_task(team_id, "a", task.id)
    await client.release_task(team_id, "a", task.id)
    queue: Any = board.queue  # the generic queue keeps the index entries
    await queue._repair_pending(keys.open(task), stale)  # as a reader that saw it in progress
    assert await ids(client, keys, keys.open_prefix()) == [task.id]
    claimed = await client.claim_task(team_id, "b")
    assert claimed is not None and claimed.id == task.id


async def test_claim_reads_only_open_tasks(client: LocalTeamClient) -> None:
    """A claim costs reads proportional to unfinished tasks, not to the size of the board."""
    team = await make_team(client)
    tasks = [await client.assign_task(team.id, f"t{i}") for i in range(60)]
    for t in tasks[:56]:
        await client.claim_task(team.id, "a", t.id)
        await client.complete_task(team.id, "a", t.id)
    counting = CountingStore(client.store)
    board_client = LocalTeamClient(cast(BaseStore, counting), client.ctx, clock=client.clock)
    claimed = await board_client.claim_task(team.id, "b")
    assert claimed is not None and claimed.id == tasks[56].id
    keys = TeamKeys(client.ctx.owner_scope(), team.id)
    # the team record and the unfinished tasks at most (4 of them), never the 56 finished ones
    assert counting.under(keys.tasks_prefix()) <= 4
    assert counting.calls["get"] + counting.calls["get_many"] <= 3
    assert len(await client.store.list_keys(keys.open_prefix())) == 3  # pending
    assert len(await client.store.list_keys(keys.held_prefix())) == 1  # in progress


async def test_lost_index_entry_is_rebuilt(client: LocalTeamClient) -> None:
    team = await make_team(client)
    task = await client.assign_task(team.id, "orphan")
    keys = TeamKeys(client.ctx.owner_scope(), team.id)
    await client.store.delete(keys.open(task))
    assert await client.claim_task(team.id, "a") is None
    assert await TaskBoard(client.store, keys).rebuild_index() == 1
    claimed = await client.claim_task(team.id, "a")
    assert claimed is not None and claimed.id == task.id
