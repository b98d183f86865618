"""What the dashboard derives from stored records: lapsed task leases name the member that held them."""

from __future__ import annotations

from datetime import UTC, datetime

from agentscope_teams.server.error_reads import lapsed_leases
from agentscope_teams.teams import Task
from agentscope_teams.teams.rules.models import TaskEvent

AT = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_lapsed_lease_names_the_member_that_claimed_the_task() -> None:
    history = [
        TaskEvent(at=AT, actor="lead", action="created"),
        TaskEvent(at=AT, actor="w1", action="claimed"),
        TaskEvent(at=AT, actor="board", action="lease_expired", detail="'w1' stopped renewing"),
        TaskEvent(at=AT, actor="w2", action="claimed"),
        TaskEvent(at=AT, actor="w2", action="completed"),
    ]
    task = Task(id="t-1", seq=1, title="Build", history=history)
    [entry] = lapsed_leases(task)
    assert (entry.kind, entry.who, entry.task_id) == ("lease_expired", "w1", "t-1")
    assert "stopped renewing" in entry.detail
    assert lapsed_leases(task.model_copy(update={"history": history[:2]})) == []
