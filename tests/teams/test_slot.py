"""A member woken for a task it then leaves unreported (e.g. at its step limit) is woken again."""

from __future__ import annotations

from typing import Any, cast

from agentscope_teams.teams.member.slot import Slot


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
