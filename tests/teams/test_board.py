"""Task board semantics in one process, over every backend and both board paths (generic and
native, :mod:`.board_paths`): the conformance scenarios of the claim rule."""

from __future__ import annotations

import pytest

from agentscope_teams.errors import (
    ClaimConflict,
    NotTaskOwnerError,
    TaskStateError,
    TeamError,
    UnknownMemberError,
)
from agentscope_teams.teams import (
    LocalTeamClient,
    Member,
    TaskStatus,
    Team,
    UnknownTaskError,
)

from .board_paths import both_paths  # noqa: F401 (both paths of every backend)
from .conftest import FakeClock

pytestmark = pytest.mark.anyio


async def make_team(client: LocalTeamClient, *names: str) -> Team:
    members = [Member(name=n, spec="worker") for n in names or ("a", "b")]
    return await client.create_team("crew", members=members)


async def test_claim_then_complete_records_history(client: LocalTeamClient) -> None:
    team = await make_team(client)
    task = await client.assign_task(team.id, "write docs", "the README")
    assert (task.status, task.owner, task.attempts) == (TaskStatus.PENDING, None, 0)
    claimed = await client.claim_task(team.id, "a")
    assert claimed is not None and claimed.id == task.id
    assert (claimed.status, claimed.owner, claimed.attempts) == (TaskStatus.IN_PROGRESS, "a", 1)
    assert claimed.lease_expires_at is not None
    done = await client.complete_task(team.id, "a", task.id, "README written")
    assert (done.status, done.result) == (TaskStatus.COMPLETED, "README written")
    assert [(e.actor, e.action) for e in done.history] == [
        ("lead", "created"),
        ("a", "claimed"),
        ("a", "completed"),
    ]
    assert await client.get_task(team.id, task.id) == done
    assert await client.claim_task(team.id, "b") is None


async def test_claim_next_takes_oldest_first(client: LocalTeamClient) -> None:
    team = await make_team(client)
    ids = [(await client.assign_task(team.id, f"task {i}")).id for i in range(12)]
    got = [await client.claim_task(team.id, "a") for _ in ids]
    assert [t.id for t in got if t is not None] == ids
    assert await client.claim_task(team.id, "b") is None


async def test_named_claim_has_one_winner_and_is_idempotent(client: LocalTeamClient) -> None:
    team = await make_team(client)
    task = await client.assign_task(team.id, "review")
    first = await client.claim_task(team.id, "a", task.id)
    again = await client.claim_task(team.id, "a", task.id)
    assert first is not None and again is not None
    assert (again.owner, again.attempts) == ("a", 1)
    with pytest.raises(ClaimConflict, match=f"{task.id!r} is already claimed by 'a'") as err:
        await client.claim_task(team.id, "b", task.id)
    assert (err.value.task_id, err.value.owner) == (task.id, "a")


async def test_assigned_task_is_only_claimable_by_its_assignee(client: LocalTeamClient) -> None:
    team = await make_team(client)
    task = await client.assign_task(team.id, "perf", assignee="b")
    assert await client.claim_task(team.id, "a") is None
    with pytest.raises(ClaimConflict, match="assigned to 'b', not 'a'"):
        await client.claim_task(team.id, "a", task.id)
    claimed = await client.claim_task(team.id, "b")
    assert claimed is not None and claimed.id == task.id


async def test_task_blocked_by_two_waits_for_both(client: LocalTeamClient) -> None:
    team = await make_team(client)
    first = await client.assign_task(team.id, "first")
    second = await client.assign_task(team.id, "second")
    final = await client.assign_task(team.id, "final", blocked_by=[first.id, second.id])
    with pytest.raises(TaskStateError, match=f"{first.id!r}, {second.id!r}"):
        await client.claim_task(team.id, "a", final.id)
    for t in (first, second):
        assert await client.claim_task(team.id, "a", t.id) is not None
    assert await client.claim_task(team.id, "b") is None
    await client.complete_task(team.id, "a", first.id)
    assert (await client.get_task(team.id, final.id)).blocked_reason == (
        f"waiting for unfinished task(s) {second.id!r}"
    )
    assert await client.claim_task(team.id, "b") is None
    await client.complete_task(team.id, "a", second.id)
    assert (await client.get_task(team.id, final.id)).blocked_reason is None
    claimed = await client.claim_task(team.id, "b")
    assert claimed is not None and claimed.id == final.id


async def test_failed_blocker_is_reported(client: LocalTeamClient) -> None:
    team = await make_team(client)
    base = await client.assign_task(team.id, "base")
    child = await client.assign_task(team.id, "child", blocked_by=[base.id])
    await client.claim_task(team.id, "a", base.id)
    failed = await client.fail_task(team.id, "a", base.id, "disk full")
    assert (failed.status, failed.error) == (TaskStatus.FAILED, "disk full")
    reason = f"blocked by failed task {base.id!r}"
    assert (await client.get_task(team.id, child.id)).blocked_reason == reason
    listed = {t.id: t for t in await client.list_tasks(team.id)}
    assert listed[child.id].blocked_reason == reason
    with pytest.raises(TaskStateError, match=reason):
        await client.claim_task(team.id, "b", child.id)
    assert await client.claim_task(team.id, "b") is None


async def test_only_the_owner_finishes_a_task(client: LocalTeamClient) -> None:
    team = await make_team(client)
    task = await client.assign_task(team.id, "fix")
    with pytest.raises(TaskStateError, match="pending, not in progress; claim it"):
        await client.complete_task(team.id, "a", task.id)
    await client.claim_task(team.id, "a", task.id)
    msg = f"task {task.id!r} is owned by 'a', not 'b'"
    for op in (
        client.complete_task(team.id, "b", task.id, "x"),
        client.fail_task(team.id, "b", task.id, "x"),
        client.release_task(team.id, "b", task.id),
        client.renew_task_lease(team.id, "b", task.id),
    ):
        with pytest.raises(NotTaskOwnerError, match=msg):
            await op
    done = await client.complete_task(team.id, "a", task.id, "ok")
    assert await client.complete_task(team.id, "a", task.id, "ok") == done
    with pytest.raises(TaskStateError, match="already completed"):
        await client.fail_task(team.id, "a", task.id, "late")
    with pytest.raises(TaskStateError, match="already completed; it cannot be claimed"):
        await client.claim_task(team.id, "b", task.id)


async def test_release_returns_the_task_to_pending(client: LocalTeamClient) -> None:
    team = await make_team(client)
    task = await client.assign_task(team.id, "maybe")
    await client.claim_task(team.id, "a", task.id)
    released = await client.release_task(team.id, "a", task.id)
    assert (released.status, released.owner) == (TaskStatus.PENDING, None)
    again = await client.claim_task(team.id, "b")
    assert again is not None and (again.owner, again.attempts) == ("b", 2)


async def test_expired_lease_is_taken_over(client: LocalTeamClient, clock: FakeClock) -> None:
    team = await make_team(client)
    task = await client.assign_task(team.id, "slow")
    await client.claim_task(team.id, "a", task.id, task_lease=10)
    clock.advance(5)
    await client.renew_task_lease(team.id, "a", task.id)
    clock.advance(8)
    assert await client.claim_task(team.id, "b") is None
    with pytest.raises(ClaimConflict):
        await client.claim_task(team.id, "b", task.id)
    clock.advance(3)
    taken = await client.claim_task(team.id, "b")
    assert taken is not None and (taken.owner, taken.attempts) == ("b", 2)
    assert [e.action for e in taken.history][-2:] == ["lease_expired", "claimed"]
    with pytest.raises(NotTaskOwnerError, match="owned by 'b', not 'a'"):
        await client.complete_task(team.id, "a", task.id, "too late")


async def test_lease_expiry_fails_the_task_at_max_attempts(
    client: LocalTeamClient, clock: FakeClock
) -> None:
    team = await make_team(client)
    task = await client.assign_task(team.id, "flaky", max_attempts=2)
    await client.claim_task(team.id, "a", task.id, task_lease=1)
    clock.advance(2)
    await client.claim_task(team.id, "b", task.id, task_lease=1)
    clock.advance(2)
    assert not await client.wait_for_tasks(team.id, timeout=0)
    reaped = await client.reap_expired(team.id)
    assert [t.id for t in reaped] == [task.id]
    failed = await client.get_task(team.id, task.id)
    assert failed.status is TaskStatus.FAILED and failed.attempts == 2
    assert failed.error is not None and "all 2 attempts are used" in failed.error
    assert await client.wait_for_tasks(team.id, timeout=0)


async def test_reap_returns_expired_task_to_pending(
    client: LocalTeamClient, clock: FakeClock
) -> None:
    team = await make_team(client)
    task = await client.assign_task(team.id, "x")
    await client.claim_task(team.id, "a", task.id, task_lease=1)
    assert await client.reap_expired(team.id) == []
    clock.advance(2)
    (reaped,) = await client.reap_expired(team.id)
    assert (reaped.status, reaped.owner, reaped.attempts) == (TaskStatus.PENDING, None, 1)


async def test_cancel_is_for_the_lead(client: LocalTeamClient) -> None:
    team = await make_team(client)
    task = await client.assign_task(team.id, "obsolete")
    with pytest.raises(TeamError, match="only the lead 'lead' may cancel"):
        await client.cancel_task(team.id, task.id, actor="a")
    cancelled = await client.cancel_task(team.id, task.id, reason="not needed")
    assert cancelled.status is TaskStatus.CANCELLED
    assert await client.list_tasks(team.id, TaskStatus.CANCELLED) == [cancelled]
    assert await client.list_tasks(team.id, TaskStatus.PENDING) == []
    assert await client.wait_for_tasks(team.id, timeout=0)


async def test_bad_assignments_are_rejected(client: LocalTeamClient) -> None:
    team = await make_team(client)
    with pytest.raises(
        UnknownMemberError, match=r"'ghost' is not a member .* 'lead' \(lead\), 'a', 'b'"
    ):
        await client.assign_task(team.id, "x", assignee="ghost")
    with pytest.raises(UnknownTaskError, match="'t-999999'"):
        await client.assign_task(team.id, "x", blocked_by=["t-999999"])
    with pytest.raises(UnknownMemberError):
        await client.claim_task(team.id, "ghost")
    with pytest.raises(UnknownTaskError, match="no task 't-nope'"):
        await client.claim_task(team.id, "a", "t-nope")
    assert await client.list_tasks(team.id) == []


async def test_prefer_own_returns_the_task_the_member_holds(
    client: LocalTeamClient, clock: FakeClock
) -> None:
    team = await make_team(client)
    first = await client.assign_task(team.id, "first")
    mine = await client.assign_task(team.id, "mine")
    await client.claim_task(team.id, "a", mine.id, task_lease=10)
    clock.advance(20)  # even once its lease ran out, it is still the member's own task
    own = await client.claim_task(team.id, "a", prefer_own=True)
    assert own is not None and (own.id, own.owner, own.attempts) == (mine.id, "a", 1)
    assert own.lease_expires_at is not None and own.lease_expires_at > clock.now
    assert await client.claim_task(team.id, "b", prefer_own=True) == await client.get_task(
        team.id, first.id
    )  # b holds nothing: it takes the oldest claimable task
    await client.complete_task(team.id, "b", first.id)
    clock.advance(60)
    again = await client.claim_task(team.id, "a")  # without prefer_own: a new attempt
    assert again is not None and (again.id, again.attempts) == (mine.id, 2)


async def test_named_claim_of_an_exhausted_lease_records_the_failure(
    client: LocalTeamClient, clock: FakeClock
) -> None:
    team = await make_team(client)
    task = await client.assign_task(team.id, "flaky", max_attempts=1)
    await client.claim_task(team.id, "a", task.id, task_lease=1)
    clock.advance(2)
    with pytest.raises(TaskStateError, match="all 1 attempts are used"):
        await client.claim_task(team.id, "b", task.id)
    assert (await client.get_task(team.id, task.id)).status is TaskStatus.FAILED
    assert await client.wait_for_tasks(team.id, timeout=0)


async def test_open_board_holds_open_tasks_then_the_tasks_they_wait_on(
    client: LocalTeamClient,
) -> None:
    team = await make_team(client)
    done, failed, running = [(await client.assign_task(team.id, t)).id for t in "xyz"]
    after_done = await client.assign_task(team.id, "after x", blocked_by=[done])
    after_failed = await client.assign_task(team.id, "after y", blocked_by=[failed])
    for t in (done, failed, running):
        await client.claim_task(team.id, "a", t)
    await client.complete_task(team.id, "a", done)
    await client.fail_task(team.id, "a", failed, "no")
    board = await client.open_board(team.id)
    assert [t.id for t in board] == [running, after_done.id, after_failed.id, done, failed]
    assert [t.blocked_reason for t in board[1:3]] == [None, f"blocked by failed task {failed!r}"]
