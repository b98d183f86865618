"""A member woken for tasks it then leaves untaken or unreported (one task per turn, or at its
step limit) is woken again, a bounded number of turns in a row."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import utcnow
from agentscope_teams.store import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, Member
from agentscope_teams.teams.member.slot import Slot
from agentscope_teams.teams.member.work import find_work


def test_offers_are_made_again_until_turns_in_a_row_move_no_task() -> None:
    """Held and pending offers alike: made again after each turn, up to ``limit`` more turns in
    a row that move no task; then given up (reported once); a turn that moves a task starts the
    count afresh."""
    slot = Slot(ref=cast(Any, None), name="reviewer")
    held, pending = ("t-1", "in_progress", 1), ("t-2", "pending", 0)
    given_up = []
    for _ in range(5):
        slot.offered |= {held, pending}
        given_up.append(slot.reoffer({held, pending}, moved=False, limit=3))
    assert given_up == [set(), set(), set(), {held, pending}, set()]
    assert {held, pending} <= slot.offered  # not offered in a loop
    slot.offered |= {pending}
    assert slot.reoffer({pending}, moved=True, limit=3) == set()  # it took another task
    assert not slot.offered & {held, pending}  # both are offered again
    slot.offered |= {held, pending}
    assert slot.reoffer({held, pending}, moved=False, limit=3) == set()
    assert not slot.offered & {held, pending}


@pytest.mark.anyio
async def test_a_held_task_whose_lease_lapsed_is_offered_to_its_owner_again() -> None:
    """A member offered its in-progress task (woken for it as often as MAX_REWAKES allows) is
    woken once more when the task's lease lapses, so its claim takes the task up again. The offer's key did not change with the lapse: a task assigned
    to it (nobody else may claim it) stayed in progress for good, the team waiting on it."""
    ctx = RuntimeContext(session_id="s", user_id="alice")
    store = InMemoryStore()
    client = LocalTeamClient(store, ctx)
    team = await client.create_team("t", members=[Member(name="ann", spec="x")])
    task = await client.assign_task(team.id, "build", assignee="ann")
    await client.claim_task(team.id, "ann", task.id, task_lease=60)
    woken = await find_work(client, team, "ann", await client.open_board(team.id), set())
    assert woken is not None and woken.own == [task.id]

    past = LocalTeamClient(store, ctx, clock=lambda: utcnow() - timedelta(hours=1))
    await past.renew_task_lease(team.id, "ann", task.id, task_lease=60)  # now lapsed
    tasks = await client.open_board(team.id)
    assert await find_work(client, team, "ann", tasks, woken.offers)
    again = await client.claim_task(team.id, "ann", prefer_own=True)  # what the wake leads to
    assert again is not None and again.id == task.id and not again.lease_expired(utcnow())
