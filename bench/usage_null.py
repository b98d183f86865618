"""A Redis usage backend whose scripts are answered in Python at once, sending nothing: what a
governed call costs without its two store operations (the governor's own Python). Used by
``usage_overhead`` and ``usage_instructions`` as their "governor only" variant."""

from __future__ import annotations

from typing import Any

from agentscope_teams.usage.rules import GRANTED, Admission, Admitted


class _Answered:
    """A riding ``ADMIT`` or ``FINISH`` whose reply is in (queued nowhere)."""

    lost = False
    sent = None  # the early admission's age counts from its own start

    @staticmethod
    def done() -> bool:
        return True

    @staticmethod
    def result() -> None:
        return None


_ANSWERED = _Answered()


def answer_at_once(backend: Any) -> None:
    """Make ``backend`` (a governor's ``RedisUsage``) grant every admission and drop every settle,
    riding ones included, without a store operation."""

    async def admit(a: Admission) -> Admitted:
        return GRANTED

    async def end(*args: object) -> None:
        return None

    async def admitted(a: Admission, rider: Any) -> Admitted:
        return GRANTED

    backend.admit, backend.finish, backend.give_back, backend.landed = admit, end, end, end
    backend.admitted = admitted
    backend.admitted_now = lambda a, rider: GRANTED
    backend.ride_admit = lambda a: _ANSWERED
    backend.ride_finish = lambda a, tokens, nanos: _ANSWERED
    backend.drop = lambda rider: False
