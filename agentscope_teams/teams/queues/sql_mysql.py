"""The MariaDB/MySQL claim and named transitions on the store's asyncmy connection (see :mod:`.sql`).

The statements are :mod:`.sql`'s (the locking ``UNION ALL`` pick, the locked read of one task,
the multi-table ``UPDATE`` of the record and the row, the dependents' counters), the rules the
same Python (:mod:`..rules.eligibility`, :mod:`..rules.transitions`); what changes is how they
are sent. Each runs on the store's asyncmy connection
(:meth:`~agentscope_teams.store.sql.SqlStore.with_driver`), its parameters escaped by the
connection (:func:`~agentscope_teams.store.sql.driver.rendered`, the text built once per
shape), with no SQLAlchemy ``Connection``, compile, result proxy or per-checkout settings
check on the path; and the statements after the decision go in one packet with the commit:

* a claim is two round trips: the locked pick (which begins the transaction), then the write
  and ``COMMIT`` (an empty pick sends ``ROLLBACK``);
* a named transition (complete, fail, release, renew, cancel, a named claim) is two: the
  locked read of the task, then the write, the dependents' counters of a task that finishes and
  ``COMMIT`` (``ROLLBACK`` when the rule writes nothing); a named claim that must read its
  blockers' statuses reads them in between.

The pool does not roll the connection back again when it is given back after a ``COMMIT`` or
``ROLLBACK`` (:func:`~agentscope_teams.store.sql.driver.ended`). Settling expired leases,
enqueueing and the board's other operations stay on :class:`.sql.SqlBoardQueue`'s path.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple

from ...store.sql import mysql_rows, pyformat, rendered
from ..rules import eligibility
from ..rules.models import Task, TaskStatus
from .base import Outcome, TeamGuard, Verdict
from .sql import (
    MYSQL_DEPS,
    MYSQL_OWN,
    MYSQL_PICK,
    Blockers,
    Decide,
    SqlBoardQueue,
    columns,
)

#: One task row and its record, locked, and whether any task waits on it. Its row's lock keeps
#: the answer true until the commit: an enqueue of a dependent first locks its blockers' rows
#: (shared), so it either committed before this lock was granted (then this read, which runs
#: after, sees its dependency rows) or waits for this commit (then it reads the new status).
_LOCK_ONE = """
SELECT t.task_id, k.value, k.version, k.nparts,
       EXISTS (SELECT 1 FROM {dep} x WHERE x.team = t.team AND x.blocker_id = t.task_id)
FROM {task} t JOIN {kv} k ON k.khash = t.khash
WHERE t.team = :team AND t.task_id = :id FOR UPDATE
"""

#: The record and the task row, each by its key (cheaper for the server than one multi-table
#: ``UPDATE``).
_RECORD = "UPDATE {kv} SET value = :value, nparts = 0, version = version + 1 WHERE khash = :h"
_ROW = (
    "UPDATE {task} SET status = :status, assignee = :assignee, owner = :owner, "
    "attempts = :attempts, max_attempts = :max_attempts, lease_until = :lease_until "
    "WHERE team = :team AND task_id = :id"
)
_STATUSES = "SELECT task_id, status FROM {task} WHERE team = {team} AND task_id IN ({ids})"


@lru_cache(maxsize=256)
def _shape(template: str, **parts: str) -> str:
    """``template`` with its tables and optional parts filled in, in the form
    :func:`~agentscope_teams.store.sql.driver.rendered` takes: built once per shape."""
    return pyformat(template.format(**parts))


class _Row(NamedTuple):
    """A record row as :meth:`SqlBoardQueue._decode` reads it."""

    task_id: str
    value: bytes
    version: int
    nparts: int


class MysqlBoardQueue(SqlBoardQueue):
    """:class:`SqlBoardQueue` whose claim and named transitions run on the asyncmy connection,
    two round trips each (see the module docs)."""

    async def _claim_one(
        self,
        member: str,
        lease: float,
        now: datetime,
        guard: TeamGuard | None,
        prefer_own: bool = False,
    ) -> Task | None:
        names = {"task": self.t.task.name, "kv": self.t.kv.name}
        own = MYSQL_OWN.format(**names) if prefer_own else ""
        pick = _shape(MYSQL_PICK, own=own, **names)
        params = {"team": self.team, "member": member, "now": now.timestamp()}

        async def run(conn: Any) -> Task | None:
            rows = await mysql_rows(conn, rendered(conn, pick, params))
            if not rows:
                await mysql_rows(conn, "ROLLBACK")
                return None
            task_id, probe, value, version, nparts = rows[0]
            task = self._decode(_Row(task_id, value, version, nparts))
            done = dict.fromkeys(task.blocked_by, TaskStatus.COMPLETED)  # counted by the row
            verdict = eligibility.claim_verdict(task, member, done, now, renew_own=probe == 0)
            if not verdict.ok:  # the row disagrees with its record: repair it, claim another
                await mysql_rows(conn, self._written(conn, task, task, repair=True))
                return None
            new = eligibility.claimed_record(verdict, task, member, now, lease)
            await mysql_rows(conn, self._written(conn, task, new))
            return new.model_copy(update={"version": task.version + 1})

        return await self.store.with_driver("board claim", run)

    def _written(
        self, conn: Any, old: Task, new: Task, *, dependents: bool = True, repair: bool = False
    ) -> str:
        """The statements that write ``new`` over ``old`` (its row locked) and commit: the record,
        the row's columns, and the dependents' counters when it finishes and ``dependents``
        (whether any task waits on it, as read under its row's lock); with ``repair`` only the
        row's columns, from ``new``."""
        t = self.t
        key = {"team": self.team, "id": old.id}
        row = rendered(conn, _shape(_ROW, task=t.task.name), key | columns(new))
        if repair:
            return row + ";COMMIT"
        h = self.store.key_hash(self.keys.task(old.id))
        record = rendered(conn, _shape(_RECORD, kv=t.kv.name), {"value": new.to_bytes(), "h": h})
        sql = [record, row]
        if dependents and new.status.finished and not old.status.finished:
            completed = new.status is TaskStatus.COMPLETED
            counter = "blockers_left" if completed else "dead_blockers"
            parts = {"counter": counter, "step": "- 1" if completed else "+ 1"}
            deps = _shape(MYSQL_DEPS, task=t.task.name, dep=t.task_dep.name, **parts)
            sql.append(rendered(conn, deps, key))
        return ";".join([*sql, "COMMIT"])

    async def _statuses_on(self, conn: Any, ids: Sequence[str]) -> Blockers:
        """The statuses of the tasks ``ids`` (None: no such task), read in this transaction."""
        listed = ", ".join(conn.literal(i) for i in ids)
        team = conn.literal(self.team)
        rows = await mysql_rows(
            conn, _STATUSES.format(task=self.t.task.name, team=team, ids=listed)
        )
        found = {r[0]: TaskStatus(r[1]) for r in rows}
        return {b: found.get(b) for b in ids}

    async def _transition(
        self, task_id: str, decide: Decide, now: datetime, *, claimer: str | None = None
    ) -> Outcome:
        """Lock ``task_id``'s row, let ``decide`` judge the record (with its blockers' statuses
        when a claim by ``claimer`` turns on them), write what it returns and commit."""
        names = {"task": self.t.task.name, "kv": self.t.kv.name}
        locked = _shape(_LOCK_ONE, dep=self.t.task_dep.name, **names)
        params = {"team": self.team, "id": task_id}

        async def run(conn: Any) -> Outcome:
            rows = await mysql_rows(conn, rendered(conn, locked, params))
            if not rows:
                await mysql_rows(conn, "ROLLBACK")
                return Outcome(Verdict.MISSING)
            task_id_, value, version, nparts, dependents = rows[0]
            task = self._decode(_Row(task_id_, value, version, nparts))
            wanted = claimer is not None and eligibility.needs_blockers(task, claimer, now)
            states = await self._statuses_on(conn, task.blocked_by) if wanted else {}
            verdict, new, answer = decide(task, states, now)
            if new is None:
                await mysql_rows(conn, "ROLLBACK")
                return Outcome(verdict, answer)
            await mysql_rows(conn, self._written(conn, task, new, dependents=bool(dependents)))
            written = new.model_copy(update={"version": task.version + 1})
            return Outcome(verdict, written if answer is new else answer)

        return await self.store.with_driver("board transition", run)
