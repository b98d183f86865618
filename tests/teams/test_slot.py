"""A member woken for a task it then leaves unreported (e.g. at its step limit) is woken again."""

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


def test_held_tasks_are_offered_again_a_bounded_number_of_times() -> None:
    slot = Slot(ref=cast(Any, None), name="reviewer")
    held, pending = ("t-1", "in_progress", 1), ("t-2", "pending", 0)
    for _ in range(5):
        slot.offered |= {held, pending}
        slot.reoffer_held({held, pending}, limit=3)
    assert slot.rewakes[held] == 3
    assert held in slot.offered  # after three more chances it is not offered in a loop
    assert pending in slot.offered  # a task the member chose not to take is never re-offered
    slot.offered.discard(held)
    slot.reoffer_held({held}, limit=3)
    assert held not in slot.offered and slot.rewakes[held] == 3


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
