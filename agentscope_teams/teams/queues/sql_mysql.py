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
  blockers' statuses reads them in between;
* a transition (complete, fail, release, renew, cancel) of a task whose record this queue
  wrote last (its claim or renewal: the queue keeps the bytes of up to :data:`KEPT_TASKS`
  in-progress records) is one: the rule runs on the kept record, and the packet is the locked
  read checking that the stored record is still that one (its version and bytes), the
  writes guarded by that check, and ``COMMIT``. When the record moved on (another process
  renewed, released or reclaimed it), or a finish has dependents whose counters to move,
  nothing is written and the transition runs as above.

The pool does not roll the connection back again when it is given back after a ``COMMIT`` or
``ROLLBACK`` (:func:`~agentscope_teams.store.sql.driver.ended`). Settling expired leases,
enqueueing and the board's other operations stay on :class:`.sql.SqlBoardQueue`'s path.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple

from ...store.sql import SqlStore, mysql_affected, mysql_rows, pyformat, rendered
from ..rules import eligibility
from ..rules.models import Task, TaskStatus, TeamKeys
from .base import Outcome, TeamGuard, Verdict
from .sql import (
    CANDIDATE,
    MYSQL_DEPS,
    MYSQL_OWN,
    MYSQL_PICK,
    Blockers,
    Decide,
    SqlBoardQueue,
    columns,
    looked,
)

#: One task row and its record, locked, and whether any task waits on it. Its row's lock keeps
#: the answer true until the commit: an enqueue of a dependent first locks its blockers' rows
#: (shared), so it either committed before this lock was granted (then this read, which runs
#: after, sees its dependency rows) or waits for this commit (then it reads the new status).
_LOCK_ONE = """
SELECT t.task_id, k.value, k.version, k.nparts,
       EXISTS (SELECT 1 FROM {dep} x WHERE x.team = t.team AND x.blocker_id = t.task_id), t.khash
FROM {task} t JOIN {kv} k ON k.khash = t.khash
WHERE t.team = :team AND t.task_id = :id FOR UPDATE
"""

#: The same locked read for a task whose record this queue wrote last (:class:`_Kept`): ``@ok``
#: says whether the stored record is still that one (its version and its bytes: the rule's
#: decision on the kept record is then the decision on the stored one) and, before a finish, that
#: no task waits on it (whose counters the finish would move: :data:`_NO_DEPENDENTS`). The
#: writes that follow in the packet apply only when ``@ok`` is set (``AND @ok``: a constant to
#: the planner). The aggregate sets it whether the row exists or not.
_LOCK_KEPT = """SELECT COALESCE(MAX(k.version = :version AND k.value = :kept{free}), 0)
INTO @ok FROM {task} t JOIN {kv} k ON k.khash = t.khash
WHERE t.team = :team AND t.task_id = :id FOR UPDATE"""
_NO_DEPENDENTS = """ AND NOT EXISTS (
  SELECT 1 FROM {dep} x WHERE x.team = t.team AND x.blocker_id = t.task_id)"""

#: The record and the task row, each by its key (cheaper for the server than one multi-table
#: ``UPDATE``).
_RECORD = "UPDATE {kv} SET value = :value, nparts = 0, version = version + 1 WHERE khash = :h"
_ROW = (
    "UPDATE {task} SET status = :status, assignee = :assignee, owner = :owner, "
    "attempts = :attempts, max_attempts = :max_attempts, lease_until = :lease_until "
    "WHERE team = :team AND task_id = :id"
)
_STATUSES = "SELECT task_id, status FROM {task} WHERE team = {team} AND task_id IN ({ids})"
#: Records of in-progress tasks a queue keeps (the oldest dropped first).
KEPT_TASKS = 256


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


class _Kept(NamedTuple):
    """The record this queue last wrote for an in-progress task: its bytes, version and key hash."""

    value: bytes
    version: int
    khash: bytes


class MysqlBoardQueue(SqlBoardQueue):
    """:class:`SqlBoardQueue` whose claim and named transitions run on the asyncmy connection,
    two round trips each, or one (see the module docs)."""

    def __init__(self, store: SqlStore, keys: TeamKeys) -> None:
        super().__init__(store, keys)
        self._kept: dict[str, _Kept] = {}

    def _keep(self, task: Task, value: bytes, version: int, khash: bytes) -> None:
        """Remember ``task``'s record as just written, while it is in progress."""
        kept = self._kept
        kept.pop(task.id, None)
        if task.status is not TaskStatus.IN_PROGRESS:
            return
        kept[task.id] = _Kept(value, version, khash)
        if len(kept) > KEPT_TASKS:
            del kept[next(iter(kept))]

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
            task_id, probe, value, version, nparts, khash = rows[0]
            task = self._decode(_Row(task_id, value, version, nparts))
            done = dict.fromkeys(task.blocked_by, TaskStatus.COMPLETED)  # counted by the row
            verdict = eligibility.claim_verdict(task, member, done, now, renew_own=probe == 0)
            if not verdict.ok:  # the row disagrees with its record: repair it, claim another
                await mysql_rows(conn, self._row_written(conn, task.id, task) + ";COMMIT")
                return None
            new = eligibility.claimed_record(verdict, task, member, now, lease)
            record = new.to_bytes()
            await mysql_rows(
                conn, ";".join([*self._written(conn, task, new, record, khash), "COMMIT"])
            )
            self._keep(new, record, task.version + 1, khash)
            return new.model_copy(update={"version": task.version + 1})

        return await self.store.with_driver("board claim", run)

    async def _look(self, member: str, now: datetime) -> tuple[str | None, bool]:
        """:data:`~.sql.CANDIDATE` and the ``COMMIT`` that ends its transaction, in one packet."""
        look = _shape(CANDIDATE, task=self.t.task.name)
        params = self._look_params(member, now)

        async def run(conn: Any) -> tuple[str | None, bool]:
            rows = await mysql_rows(conn, rendered(conn, look, params) + ";COMMIT")
            return looked(rows[0])

        return await self.store.with_driver("board claim look", run)

    def _row_written(self, conn: Any, task_id: str, new: Task, only_if: str = "") -> str:
        """The statement that sets ``task_id``'s row columns from ``new``."""
        key = {"team": self.team, "id": task_id}
        return rendered(conn, _shape(_ROW + only_if, task=self.t.task.name), key | columns(new))

    def _written(
        self,
        conn: Any,
        old: Task,
        new: Task,
        record: bytes,
        khash: bytes,
        *,
        dependents: bool = True,
        only_if: str = "",
    ) -> list[str]:
        """The statements that write ``new`` (encoded as ``record``) over ``old`` (its row
        locked): the record, the row's columns (each with ``only_if`` added to its condition),
        and the dependents' counters when it finishes and ``dependents`` (whether any task
        waits on it, as read under its row's lock)."""
        sql = [
            rendered(
                conn, _shape(_RECORD + only_if, kv=self.t.kv.name), {"value": record, "h": khash}
            ),
            self._row_written(conn, old.id, new, only_if),
        ]
        if dependents and new.status.finished and not old.status.finished:
            completed = new.status is TaskStatus.COMPLETED
            counter = "blockers_left" if completed else "dead_blockers"
            parts = {"counter": counter, "step": "- 1" if completed else "+ 1"}
            deps = _shape(MYSQL_DEPS, task=self.t.task.name, dep=self.t.task_dep.name, **parts)
            sql.append(rendered(conn, deps, {"team": self.team, "id": old.id}))
        return sql

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
        when a claim by ``claimer`` turns on them), write what it returns and commit: in one
        packet when this queue wrote the record last (:meth:`_kept_transition`)."""
        kept = self._kept.get(task_id) if claimer is None else None
        if kept is not None:
            done = await self._kept_transition(task_id, kept, decide, now)
            if done is not None:
                return done
        names = {"task": self.t.task.name, "kv": self.t.kv.name}
        locked = _shape(_LOCK_ONE, dep=self.t.task_dep.name, **names)
        params = {"team": self.team, "id": task_id}

        async def run(conn: Any) -> Outcome:
            rows = await mysql_rows(conn, rendered(conn, locked, params))
            if not rows:
                await mysql_rows(conn, "ROLLBACK")
                return Outcome(Verdict.MISSING)
            task_id_, value, version, nparts, dependents, khash = rows[0]
            task = self._decode(_Row(task_id_, value, version, nparts))
            wanted = claimer is not None and eligibility.needs_blockers(task, claimer, now)
            states = await self._statuses_on(conn, task.blocked_by) if wanted else {}
            verdict, new, answer = decide(task, states, now)
            if new is None:
                await mysql_rows(conn, "ROLLBACK")
                return Outcome(verdict, answer)
            record = new.to_bytes()
            sql = self._written(conn, task, new, record, khash, dependents=bool(dependents))
            await mysql_rows(conn, ";".join([*sql, "COMMIT"]))
            self._keep(new, record, task.version + 1, khash)
            written = new.model_copy(update={"version": task.version + 1})
            return Outcome(verdict, written if answer is new else answer)

        return await self.store.with_driver("board transition", run)

    async def _kept_transition(
        self, task_id: str, kept: _Kept, decide: Decide, now: datetime
    ) -> Outcome | None:
        """``decide`` on the record this queue wrote last for ``task_id``, and its write sent in
        the packet of the locked read that checks the record is still that one, with the commit:
        one round trip. None when the rule writes nothing there or the record moved on (then
        nothing was written: the caller reads the row)."""
        task = Task.from_bytes(kept.value, kept.version)
        verdict, new, answer = decide(task, {}, now)
        if new is None or answer is not new:  # a refusal or no change: worded from the row
            return None
        names = {"task": self.t.task.name, "kv": self.t.kv.name}
        finishes = new.status.finished and not task.status.finished
        free = _NO_DEPENDENTS.format(dep=self.t.task_dep.name) if finishes else ""
        lock = _shape(_LOCK_KEPT, free=free, **names)
        params = {"team": self.team, "id": task_id, "version": kept.version, "kept": kept.value}
        record = new.to_bytes()

        async def run(conn: Any) -> bool:
            writes = self._written(
                conn, task, new, record, kept.khash, dependents=False, only_if=" AND @ok"
            )
            changed = await mysql_affected(
                conn, ";".join([rendered(conn, lock, params), *writes, "COMMIT"])
            )
            return changed[1] == 1  # the record was written

        if not await self.store.with_driver("board transition", run):
            self._kept.pop(task_id, None)
            return None
        self._keep(new, record, kept.version + 1, kept.khash)
        written = new.model_copy(update={"version": kept.version + 1})
        return Outcome(verdict, written)
