"""What reading and claiming cost as the board grows: store calls counted, never timed.

Counted on the in-memory store (a :class:`CountingStore` counts ``get``, ``get_many``,
``list_keys``, ``put`` and ``delete`` calls: each is one round trip on Redis and SQL, a batched
read included). Before issue 13, listing 10,000 tasks took 10,022 calls, and a claim with 1,000
tasks held by others 1,019 (every held task ahead of it in the open index was read again).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.rules.transitions import created

from .conftest import FakeClock
from .helpers import CountingStore

pytestmark = pytest.mark.anyio
LISTED = 10_000
HELD = 1_000


@pytest.fixture
async def counting() -> AsyncIterator[CountingStore]:
    async with store_from_url("memory://") as s:
        yield CountingStore(s)


async def test_list_tasks_of_10000_reads_in_pages(
    counting: CountingStore, alice: RuntimeContext, clock: FakeClock
) -> None:
    store = cast(BaseStore, counting)
    client = LocalTeamClient(store, alice, clock=clock)
    team = await client.create_team("big", members=[Member(name="a")])
    keys = TeamKeys(alice.owner_scope(), team.id)
    for seq in range(1, LISTED + 1):  # written directly: the listing is what is counted
        blockers = [f"t-{seq - 1}"] if seq % 100 == 0 else []
        task = created(seq, "lead", clock(), title=f"task {seq}", blocked_by=blockers)
        await counting.inner.put(keys.task(task.id), task.to_bytes())

    counting.reset()
    tasks = await client.list_tasks(team.id)
    calls = counting.calls["get"] + counting.calls["get_many"] + counting.calls["list_keys"]
    assert calls <= 25, counting.calls
    assert [t.seq for t in tasks] == list(range(1, LISTED + 1))
    assert tasks[99].blocked_reason == "waiting for unfinished task(s) 't-99'"
    assert not tasks.problems


async def held_board(client: LocalTeamClient, held: int) -> tuple[str, str]:
    """A team whose member ``a`` holds ``held`` tasks, with one pending task after them."""
    team = await client.create_team("busy", members=[Member(name="a"), Member(name="b")])
    for i in range(held):
        task = await client.assign_task(team.id, f"held {i}")
        await client.claim_task(team.id, "a", task.id)
    return team.id, (await client.assign_task(team.id, "the pending one")).id


@pytest.mark.parametrize("prefer_own", [False, True], ids=["claim_next", "prefer_own"])
async def test_a_claim_costs_the_same_with_1000_held_tasks(
    counting: CountingStore, alice: RuntimeContext, clock: FakeClock, prefer_own: bool
) -> None:
    calls = {}
    for held in (0, HELD):
        client = LocalTeamClient(cast(BaseStore, counting), alice, clock=clock)
        team_id, pending = await held_board(client, held)
        counting.reset()
        task = await client.claim_task(team_id, "b", prefer_own=prefer_own)
        assert task is not None and task.id == pending
        calls[held] = counting.total
        assert calls[held] <= 10, counting.calls
    assert calls[HELD] == calls[0]  # the held tasks are never read


async def test_a_claim_reclaims_an_expired_lease_among_1000_held_tasks(
    counting: CountingStore, alice: RuntimeContext, clock: FakeClock
) -> None:
    client = LocalTeamClient(cast(BaseStore, counting), alice, clock=clock, task_lease=60)
    team_id, _ = await held_board(client, HELD)
    first = (await client.list_tasks(team_id, TaskStatus.IN_PROGRESS))[0]
    clock.advance(30)
    for task in await client.list_tasks(team_id, TaskStatus.IN_PROGRESS):
        if task.id != first.id:  # every other holder renews; the first one's holder died
            await client.renew_task_lease(team_id, "a", task.id)
    clock.advance(31)
    counting.reset()
    task = await client.claim_task(team_id, "b")
    assert task is not None and (task.id, task.owner, task.attempts) == (first.id, "b", 2)
    assert counting.total <= 10, counting.calls


async def test_renewed_leases_are_moved_in_the_index_a_page_per_claim(
    counting: CountingStore, alice: RuntimeContext, clock: FakeClock
) -> None:
    """Entries whose recorded expiry passed while the lease was renewed cost a claim a bounded
    amount (one page of them is moved to the real expiry), and are then out of the way."""
    client = LocalTeamClient(cast(BaseStore, counting), alice, clock=clock, task_lease=60)
    team_id, _ = await held_board(client, 40)
    clock.advance(50)
    for task in await client.list_tasks(team_id, TaskStatus.IN_PROGRESS):
        await client.renew_task_lease(team_id, "a", task.id)
    clock.advance(20)  # every recorded expiry has passed; no lease has
    costs = []
    for i in range(8):
        counting.reset()
        await client.assign_task(team_id, f"more {i}")
        counting.reset()
        assert await client.claim_task(team_id, "b") is not None
        costs.append(counting.total)
    assert max(costs) <= 10 + 3 * 8, costs  # at most one page of moves per claim
    assert costs[-1] <= 10, costs  # all 40 moved by the fifth claim
    board = TaskBoard(counting.inner, TeamKeys(alice.owner_scope(), team_id), clock)
    assert len(await board.open_tasks()) == 40 + 1 + 8  # none lost, none twice
