"""The claim rule as a table: one pure function decides who may claim a task, and why not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentscope_teams.errors import ClaimConflict, TaskStateError
from agentscope_teams.teams import Task, TaskStatus
from agentscope_teams.teams.rules.eligibility import (
    ClaimOutcome,
    claim_verdict,
    claimed_record,
    needs_blockers,
    offerable,
)

NOW = datetime(2030, 1, 1, tzinfo=UTC)
LIVE, GONE = NOW + timedelta(seconds=30), NOW - timedelta(seconds=1)
P, IP = TaskStatus.PENDING, TaskStatus.IN_PROGRESS
Out = ClaimOutcome


def task(status: TaskStatus = P, **fields: Any) -> Task:
    return Task(id="t-9", seq=9, title="x", status=status, **fields)


def held(owner: str, expires: datetime, **fields: Any) -> Task:
    return task(IP, **{"owner": owner, "attempts": 1, "lease_expires_at": expires, **fields})


done, failed = TaskStatus.COMPLETED, TaskStatus.FAILED
# (task, blocker states, renew_own, outcome, error type, text in the message)
CASES: list[tuple[Task, dict[str, TaskStatus | None], bool, ClaimOutcome, Any, str]] = [
    (task(), {}, True, Out.CLAIM, None, ""),
    (task(assignee="a"), {}, True, Out.CLAIM, None, ""),
    (task(assignee="b"), {}, True, Out.ASSIGNED, ClaimConflict, "assigned to 'b', not 'a'"),
    (task(blocked_by=["t-1"]), {"t-1": done}, True, Out.CLAIM, None, ""),
    (task(blocked_by=["t-1", "t-2"]), {"t-1": done, "t-2": IP}, True, Out.WAITING, TaskStateError,
     "cannot be claimed yet: it is waiting for unfinished task(s) 't-2'"),
    (task(blocked_by=["t-1"]), {"t-1": failed}, True, Out.BLOCKED, TaskStateError,
     "it is blocked by failed task 't-1'"),
    (task(blocked_by=["t-1"]), {}, True, Out.BLOCKED, TaskStateError, "blocked by deleted task 't-1'"),
    (task(assignee="b", blocked_by=["t-1"]), {"t-1": P}, True, Out.ASSIGNED, ClaimConflict, "'b'"),
    (held("a", LIVE), {}, True, Out.RENEW, None, ""),
    (held("a", GONE, attempts=3), {}, True, Out.RENEW, None, ""),
    (held("a", LIVE), {}, False, Out.HELD, ClaimConflict, "already claimed by 'a'"),
    (held("a", GONE), {}, False, Out.RECLAIM, None, ""),
    (held("b", LIVE), {}, True, Out.HELD, ClaimConflict, "task 't-9' is already claimed by 'b'"),
    (held("b", GONE), {}, True, Out.RECLAIM, None, ""),
    (held("b", GONE, blocked_by=["t-1"]), {}, True, Out.RECLAIM, None, ""),
    (held("b", GONE, attempts=3), {}, True, Out.EXHAUSTED, TaskStateError,
     "the lease of 'b' expired and all 3 attempts are used"),
    (held("b", GONE, assignee="b"), {}, True, Out.ASSIGNED, ClaimConflict, "assigned to 'b'"),
    (task(done), {}, True, Out.FINISHED, TaskStateError,
     "task 't-9' is already completed; it cannot be claimed again"),
    (task(TaskStatus.CANCELLED), {}, True, Out.FINISHED, TaskStateError, "already cancelled"),
]  # fmt: skip


@pytest.mark.parametrize(("t", "states", "renew_own", "outcome", "error", "text"), CASES)
def test_claim_verdict(
    t: Task,
    states: dict[str, TaskStatus | None],
    renew_own: bool,
    outcome: ClaimOutcome,
    error: type[Exception] | None,
    text: str,
) -> None:
    verdict = claim_verdict(t, "a", states, NOW, renew_own=renew_own)
    assert verdict.outcome is outcome and verdict.task_id == "t-9"
    assert verdict.ok is (error is None)
    assert verdict.lease_expired is t.lease_expired(NOW)
    if error is not None:
        exc = verdict.error()
        assert type(exc) is error and text in str(exc) and text in verdict.message
        if isinstance(exc, ClaimConflict):
            assert exc.owner == (t.owner if outcome is Out.HELD else None)
        with pytest.raises(error):
            claimed_record(verdict, t, "a", NOW, 10.0)


def test_blockers_are_read_only_when_the_verdict_turns_on_them() -> None:
    assert needs_blockers(task(blocked_by=["t-1"]), "a", NOW)
    assert not needs_blockers(task(), "a", NOW)
    assert not needs_blockers(task(assignee="b", blocked_by=["t-1"]), "a", NOW)
    assert not needs_blockers(task(done, blocked_by=["t-1"]), "a", NOW)
    assert not needs_blockers(held("b", GONE, blocked_by=["t-1"]), "a", NOW)


def test_the_record_a_claim_writes() -> None:
    new = claimed_record(claim_verdict(task(), "a", {}, NOW), task(), "a", NOW, 10.0)
    assert (new.status, new.owner, new.attempts) == (IP, "a", 1)
    assert new.lease_expires_at == NOW + timedelta(seconds=10)
    mine = held("a", GONE)
    renewed = claimed_record(claim_verdict(mine, "a", {}, NOW), mine, "a", NOW, 10.0)
    assert (renewed.attempts, renewed.history) == (1, [])  # a renewal is not a new attempt
    assert renewed.lease_expires_at == NOW + timedelta(seconds=10)
    theirs = held("b", GONE)
    taken = claimed_record(claim_verdict(theirs, "a", {}, NOW), theirs, "a", NOW, 10.0)
    assert (taken.owner, taken.attempts) == ("a", 2)
    assert [e.action for e in taken.history] == ["lease_expired", "claimed"]


def test_offers_are_claimable_tasks_and_exhausted_leases() -> None:
    outcomes = {c[3]: offerable(claim_verdict(c[0], "a", c[1], NOW, renew_own=c[2])) for c in CASES}
    assert {o for o, offered in outcomes.items() if offered} == {
        Out.CLAIM,
        Out.RENEW,
        Out.RECLAIM,
        Out.EXHAUSTED,
    }
    assert set(outcomes) == set(ClaimOutcome)  # the table covers every outcome
