"""The claim rule's three forms agree, verdict by verdict: the Python rule
(:func:`~agentscope_teams.teams.rules.eligibility.claim_verdict`, run by the generic queue), the
Redis Lua script and the SQL statements of PostgreSQL and MariaDB.

Each row of the table is one state of a task (status, owner, lease live or expired, assignee, its
blocker's status, attempts left); every row is built afresh on each backend through the board and
then claimed by ``me`` three ways (the next task, the next task preferring its own, by name). Each
answer (claimed or not) must be the Python rule's for the record as read just before the claim.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import TeamError
from agentscope_teams.store.base import BaseStore
from agentscope_teams.teams import Task, TaskStatus, TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.rules.eligibility import ClaimOutcome, claim_verdict, holds

from ..backends import make_spec, unique_namespace
from ..conftest import require_service
from .conftest import FakeClock

pytestmark = pytest.mark.anyio

ME, OTHER, THIRD, LEAD = "me", "other", "third", "lead"
LEASE = 60.0
#: How ``me`` claims: the next task, the next preferring its own (the claimTask tool), by name.
HOWS = ("next", "next+own", "named")
#: The blocker's status (None: no blocker).
BLOCKERS = (None, "completed", "pending", "failed", "cancelled")


@dataclass(frozen=True)
class Row:
    status: str
    owner: str | None = None
    expired: bool = False
    exhausted: bool = False  # max_attempts 1: the one attempt is used once claimed
    assignee: str | None = None
    blocker: str | None = None

    def __str__(self) -> str:
        lease = ("expired" if self.expired else "live") if self.owner else ""
        parts = [self.status, f"owner={self.owner}" if self.owner else "", lease]
        parts += ["exhausted" if self.exhausted else "", f"assignee={self.assignee}"]
        return " ".join(p for p in [*parts, f"blocker={self.blocker}"] if p)


def table() -> list[Row]:
    rows = [Row("pending", assignee=a, blocker=b) for a in (None, ME, OTHER) for b in BLOCKERS]
    for owner in (ME, OTHER):
        for expired in (False, True):
            for exhausted in (False, True):
                for assignee in (None, owner):
                    for blocker in (None, "completed"):
                        rows.append(
                            Row("in_progress", owner, expired, exhausted, assignee, blocker)
                        )
    return rows + [Row(s) for s in ("completed", "failed", "cancelled")]


async def build(board: TaskBoard, row: Row, clock: FakeClock) -> Task:
    """The row's task on ``board`` (its blocker assigned to a third member nobody here is)."""
    blocked_by: list[str] = []
    if row.blocker is not None:
        b = await board.create(LEAD, "blocker", assignee=THIRD)
        if row.blocker in ("completed", "failed"):
            await board.claim(THIRD, b.id, LEASE)
            if row.blocker == "completed":
                await board.complete(THIRD, b.id, "done")
            else:
                await board.fail(THIRD, b.id, "broke")
        elif row.blocker == "cancelled":
            await board.cancel(LEAD, b.id, "not needed")
        blocked_by = [b.id]
    attempts = 1 if row.exhausted else 3
    task = await board.create(
        LEAD, "target", assignee=row.assignee, blocked_by=blocked_by, max_attempts=attempts
    )
    if row.status == "in_progress":
        assert row.owner is not None
        await board.claim(row.owner, task.id, LEASE)
    elif row.status in ("completed", "failed"):
        await board.claim(OTHER, task.id, LEASE)
        if row.status == "completed":
            await board.complete(OTHER, task.id, "done")
        else:
            await board.fail(OTHER, task.id, "broke")
    elif row.status == "cancelled":
        await board.cancel(LEAD, task.id, "not needed")
    if row.expired:
        clock.advance(LEASE + 1)
    return task


def python_rule(
    task: Task, states: Mapping[str, TaskStatus | None], clock: FakeClock, how: str
) -> ClaimOutcome:
    """The Python rule's verdict: a named claim (and a preferring claim of a task ``me`` holds)
    renews its own task; an anonymous one looks for a task ``me`` does not hold yet."""
    renew_own = how == "named" or (how == "next+own" and holds(task, ME))
    return claim_verdict(task, ME, states, clock(), renew_own=renew_own).outcome


async def claims(board: TaskBoard, task: Task, how: str) -> bool:
    if how == "named":
        try:
            await board.claim(ME, task.id, LEASE)
        except TeamError:
            return False
        return True
    got = await board.claim_next(ME, LEASE, prefer_own=how == "next+own")
    return got is not None and got.id == task.id


Answers = dict[tuple[str, str], tuple[bool, ClaimOutcome]]


async def answers(store: BaseStore, native: bool) -> Answers:
    """(row, how) -> (the backend's answer, the Python rule's verdict) over the whole table."""
    scope = RuntimeContext(session_id="s", user_id="u", org_id=unique_namespace()).owner_scope()
    out: Answers = {}
    for i, row in enumerate(table()):
        for how in HOWS:
            clock = FakeClock()
            board = TaskBoard(store, TeamKeys(scope, f"r{i}-{how}"), clock, native=native)
            assert board.queue.native is native
            task = await build(board, row, clock)
            read = await board.load(task.id)
            assert read is not None
            states = {b: (await board.get(b)).status for b in read.blocked_by}
            verdict = python_rule(read, states, clock, how)
            out[str(row), how] = (await claims(board, read, how), verdict)
    return out


#: The Python rule runs as the generic queue (on the memory store); the others natively.
FORMS = [("memory", False), ("redis", True), ("postgres", True), ("mariadb", True)]


@pytest.mark.parametrize(("backend", "native"), FORMS, ids=[b for b, _ in FORMS])
async def test_every_form_of_the_claim_rule_gives_the_python_answer(
    backend: str, native: bool, tmp_path: Path
) -> None:
    require_service(backend)
    async with make_spec(backend, tmp_path).open() as store:
        found = await answers(store, native)
    wrong = [
        f"{row} / {how}: claimed={got}, the rule says {want}"
        for (row, how), (got, want) in found.items()
        if got != want.ok
    ]
    assert wrong == [], "\n".join(wrong)
    assert {want for _, want in found.values()} == set(ClaimOutcome), "a verdict is not reached"
