"""The board's native queue on PostgreSQL and MariaDB/MySQL: a tasks table beside the records.

Each task has a row in ``p_task`` (:mod:`..sql_tables`, kept through the SQL store's public
table-set hook; the queue uses only the store's public interface) with the
columns a claim filters on (status, assignee, owner, attempts, lease expiry, blockers left, dead
blockers, sequence) and its JSON record in ``p_kv`` as ever (``store.get`` reads it). Every
transition writes both in one transaction, the record with version + 1.

* **claim next** takes the first claimable row with ``FOR UPDATE SKIP LOCKED`` (concurrent
  claimers skip each other's rows instead of queueing on them), probing in order, each probe an
  index scan that stops at its first match: with ``prefer_own`` the member's own held task (its
  lease renewed), then the earliest expired lease it may take (reclaimed), then the oldest pending
  row with no blockers left, none dead and routed to nobody or to the member. The cost does not
  grow with the board (indexes: :mod:`..sql_tables`). On PostgreSQL it is one statement
  (:mod:`.sql_pg`: CTE probes, ``UPDATE ... RETURNING`` moves the row and rewrites the JSON
  record); on MariaDB, which has no ``UPDATE ... RETURNING`` before 13.0, one short transaction:
  the probes as one ``UNION ALL`` of locking reads, the record computed by
  :mod:`..rules.transitions`, one multi-table ``UPDATE``, the commit (:mod:`.sql_mysql` sends
  them on the asyncmy connection, the write and the commit in one packet).
* **named transitions** (named claim, complete, fail, release, renew, cancel) lock the row, run the
  Python rule (:mod:`..rules.eligibility`, :mod:`..rules.transitions`) on the record and write the result; completing
  or failing a task updates its dependents' counters (``blockers_left`` / ``dead_blockers``) in the
  same transaction. On PostgreSQL, complete and fail are one statement (:mod:`.sql_pg`).
* **expired leases** that the claimer may not take (every attempt used, or routed to another
  member) are settled when a claim finds nothing else and its look sees some, and by ``reap``.
* **an empty pick is checked**: ``SKIP LOCKED`` also skips a claimable row that another
  transaction holds for a moment (on MariaDB, any claimer whose scan examines it), so the claim
  then looks, unlocked, for a task the member could claim (one statement, which also says whether
  expired leases wait to be settled); when there is one it claims it by id, waiting for its lock,
  instead of answering "nothing" beside it.

A blocker deleted by hand is not seen by the counters (the generic path reports it as blocking);
:meth:`~..board.TaskBoard.rebuild_index` recomputes every row from the records. Records written here
are stored inline (task records stay far below the store's chunk size).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import TextClause, and_, delete, func, insert, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ...errors import StoreError, TeamError
from ...listing import UNREADABLE
from ...store.base import encode_key
from ..rules import eligibility
from ..rules import transitions as rules
from ..rules.eligibility import ClaimOutcome
from ..rules.models import Task, TaskStatus, TeamKeys
from .base import Outcome, RuleTransitions, TeamGuard, Verdict
from .sql_tables import BoardTables

if TYPE_CHECKING:
    from ...store.sql import SqlStore

T = TypeVar("T")
Blockers = dict[str, TaskStatus | None]
#: (verdict, record to write or None, record to answer with)
Decision = tuple[Verdict, Task | None, Task]
Decide = Callable[[Task, Blockers, datetime], Decision]
#: Expired leases one empty claim settles.
SETTLE_PAGE = 8
_DEAD = (TaskStatus.FAILED.value, TaskStatus.CANCELLED.value)


#: The member's own held task first (``prefer_own``: its lease is renewed).
MYSQL_OWN = """
  (SELECT task_id, khash, 0 AS probe, seq FROM {task}
   WHERE team = :team AND status = 'in_progress' AND owner = :member
   ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
  UNION ALL"""

#: MariaDB/MySQL's pick: the probes as one ``UNION ALL`` of locking reads, each an index scan
#: that stops at its first row (``p_task_route`` serves the free and the routed probe, so no
#: claim reads the tasks routed to other members). Of the free and the member's routed task the
#: older is taken; the other stays locked until the claim commits (the member's own routed row
#: is nobody else's to take; a free one is passed by other claimers meanwhile, or waited for by
#: an empty claim's look: :meth:`SqlBoardQueue._claim_waiting`).
MYSQL_PICK = """
SELECT p.task_id, p.probe, k.value, k.version, k.nparts, p.khash FROM ({own}
  (SELECT task_id, khash, 1 AS probe, seq FROM {task}
   WHERE team = :team AND status = 'in_progress' AND lease_until <= :now
     AND attempts < max_attempts AND (assignee IS NULL OR assignee = :member)
   ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED)
  UNION ALL
  (SELECT task_id, khash, 2 AS probe, seq FROM {task}
   WHERE team = :team AND status = 'pending' AND blockers_left = 0 AND dead_blockers = 0
     AND assignee IS NULL
   ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
  UNION ALL
  (SELECT task_id, khash, 2 AS probe, seq FROM {task}
   WHERE team = :team AND status = 'pending' AND blockers_left = 0 AND dead_blockers = 0
     AND assignee = :member
   ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
  ORDER BY probe, seq LIMIT 1
) AS p JOIN {kv} k ON k.khash = p.khash
"""


#: After an empty pick, read without locking (:meth:`SqlBoardQueue._look`): a task the member
#: could claim (routed to it, free, or an expired lease it may take; each probe stops at its first
#: row), and whether an expired lease waits that it may not take (every attempt used, or routed
#: to someone else: settled then, :meth:`SqlBoardQueue._settle`). Usually an empty range each.
CANDIDATE = """
SELECT COALESCE(
  (SELECT task_id FROM {task} WHERE team = :team AND status = 'pending' AND blockers_left = 0
     AND dead_blockers = 0 AND assignee = :member LIMIT 1),
  (SELECT task_id FROM {task} WHERE team = :team AND status = 'pending' AND blockers_left = 0
     AND dead_blockers = 0 AND assignee IS NULL LIMIT 1),
  (SELECT task_id FROM {task} WHERE team = :team AND status = 'in_progress'
     AND lease_until <= :now AND attempts < max_attempts
     AND (assignee IS NULL OR assignee = :member) LIMIT 1)),
  EXISTS (SELECT 1 FROM {task} WHERE team = :team AND status = 'in_progress'
     AND lease_until <= :now
     AND (attempts >= max_attempts OR (assignee IS NOT NULL AND assignee <> :member)))
"""
#: Wait for whoever holds a task row's lock (a claim's pick skips a locked row instead).
_LOCK_WAIT = "SELECT task_id FROM {task} WHERE team = :team AND task_id = :id FOR UPDATE"
#: How often an empty claim waits for a locked candidate and picks again.
CLAIM_WAITS = 3

#: One task row and its record, locked (a named transition).
_LOCK_ONE = """
SELECT t.task_id, k.value, k.version, k.nparts FROM {task} t JOIN {kv} k ON k.khash = t.khash
WHERE t.team = :team AND t.task_id = :id FOR UPDATE
"""

#: The record and the row's columns in one multi-table UPDATE (MariaDB/MySQL).
_MYSQL_WRITE = """
UPDATE {task} t JOIN {kv} k ON k.khash = t.khash
SET k.value = :value, k.nparts = :nparts, k.version = k.version + 1, t.status = :status,
    t.assignee = :assignee, t.owner = :owner, t.attempts = :attempts,
    t.max_attempts = :max_attempts, t.lease_until = :lease_until
WHERE t.team = :team AND t.task_id = :id
"""

#: The dependents' counters of a finished task, driven by the dependency table's key.
MYSQL_DEPS = """
UPDATE {dep} x JOIN {task} d ON d.team = x.team AND d.task_id = x.task_id
SET d.{counter} = d.{counter} {step}
WHERE x.team = :team AND x.blocker_id = :id
"""
_PG_DEPS = """
UPDATE {task} d SET {counter} = d.{counter} {step} FROM {dep} x
WHERE x.team = :team AND x.blocker_id = :id AND d.team = x.team AND d.task_id = x.task_id
"""


@lru_cache(maxsize=256)
def _statement(template: str, **parts: str) -> TextClause:
    """``template`` with its tables and optional parts filled in: built once per shape."""
    return text(template.format(**parts))


def looked(row: Sequence[Any]) -> tuple[str | None, bool]:
    """A :data:`CANDIDATE` row as ``(candidate, stale)``."""
    return (None if row[0] is None else str(row[0])), bool(row[1])


def columns(task: Task) -> dict[str, Any]:
    """The row columns that follow a record's state."""
    until = task.lease_expires_at
    return {
        "status": task.status.value,
        "assignee": task.assignee,
        "owner": task.owner,
        "attempts": task.attempts,
        "max_attempts": task.max_attempts,
        "lease_until": None if until is None else until.timestamp(),
    }


class SqlBoardQueue(RuleTransitions):
    """The queue of one team's board on a SQL store (MariaDB/MySQL as is; PostgreSQL overrides
    the claim with one statement)."""

    guards_team = False
    native = True

    def __init__(self, store: SqlStore, keys: TeamKeys) -> None:
        self.store, self.keys = store, keys
        self.t = BoardTables.of(store)
        self.team = hashlib.sha256(encode_key(keys.tasks_prefix()).encode()).digest()

    # -- plumbing --------------------------------------------------------------------------

    async def _tx(self, op: str, fn: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        return await self.store.transaction(f"board {op}", fn, write=True)

    def _of_team(self) -> Any:
        return self.t.task.c.team == self.team

    def _locked_rows(self, *where: Any) -> Any:
        """Task rows with their records (inline value), locked."""
        t, kv = self.t.task, self.t.kv
        return (
            select(t.c.task_id, kv.c.value, kv.c.version, kv.c.nparts)
            .select_from(t.join(kv, kv.c.khash == t.c.khash))
            .where(self._of_team(), *where)
        )

    def _decode(self, row: Any) -> Task:
        if row.nparts:
            raise StoreError(
                f"task {row.task_id!r} of team {self.keys.team_id!r} is stored in parts; the "
                "native queue reads inline records only: run the board with "
                "AGENTSCOPE_TEAMS_BOARD_NATIVE=0"
            )
        return Task.from_bytes(bytes(row.value), int(row.version))

    async def _statuses(self, conn: AsyncConnection, ids: Sequence[str]) -> Blockers:
        t = self.t.task
        rows = await conn.execute(
            select(t.c.task_id, t.c.status).where(self._of_team(), t.c.task_id.in_(list(ids)))
        )
        found = {r.task_id: TaskStatus(r.status) for r in rows}
        return {b: found.get(b) for b in ids}

    async def _write(self, conn: AsyncConnection, old: Task, new: Task) -> Task:
        """Write ``new`` over ``old`` (its row locked): record, columns, dependents' counters."""
        kv, t = self.t.kv, self.t.task
        record = {"value": new.to_bytes(), "nparts": 0}
        if self.store.dialect == "mysql":  # one multi-table UPDATE: one round trip fewer
            both = {"team": self.team, "id": old.id, **record, **columns(new)}
            await conn.execute(_statement(_MYSQL_WRITE, task=t.name, kv=kv.name), both)
        else:
            h = self.store.key_hash(self.keys.task(old.id))
            await conn.execute(
                update(kv).where(kv.c.khash == h).values(**record, version=kv.c.version + 1)
            )
            await conn.execute(
                update(t).where(self._of_team(), t.c.task_id == old.id).values(**columns(new))
            )
        if new.status.finished and not old.status.finished:
            await conn.execute(*self.dependents_update(old.id, new.status))
        return new.model_copy(update={"version": old.version + 1})

    def dependents_update(
        self, blocker_id: str, status: TaskStatus
    ) -> tuple[TextClause, dict[str, Any]]:
        """The counters of the tasks waiting on ``blocker_id``, moved for its finish as
        ``status`` (built once per shape), and its parameters: a join driven by ``p_task_dep``'s
        key, so it reads only the dependents' rows (an ``IN (subquery)`` made MariaDB read, and
        lock-check, every task row of the team on every completion)."""
        counter = "blockers_left" if status is TaskStatus.COMPLETED else "dead_blockers"
        template = MYSQL_DEPS if self.store.dialect == "mysql" else _PG_DEPS
        names = {"task": self.t.task.name, "dep": self.t.task_dep.name}
        step = "- 1" if counter == "blockers_left" else "+ 1"
        statement = _statement(template, counter=counter, step=step, **names)
        return statement, {"team": self.team, "id": blocker_id}

    async def _transition(
        self, task_id: str, decide: Decide, now: datetime, *, claimer: str | None = None
    ) -> Outcome:
        """Lock ``task_id``'s row, let ``decide`` judge the record (with its blockers' statuses
        when a claim by ``claimer`` turns on them), write what it returns."""

        async def run(conn: AsyncConnection) -> Outcome:
            names = {"task": self.t.task.name, "kv": self.t.kv.name}
            locked = _statement(_LOCK_ONE, **names)
            row = (await conn.execute(locked, {"team": self.team, "id": task_id})).first()
            if row is None:
                return Outcome(Verdict.MISSING)
            task = self._decode(row)
            wanted = claimer is not None and eligibility.needs_blockers(task, claimer, now)
            states = await self._statuses(conn, task.blocked_by) if wanted else {}
            verdict, new, answer = decide(task, states, now)
            if new is not None:
                written = await self._write(conn, task, new)
                answer = written if answer is new else answer
            return Outcome(verdict, answer)

        return await self._tx("transition", run)

    async def _changed(self, task_id: str, change: rules.Change, now: datetime) -> Outcome:
        def decide(task: Task, _: Blockers, at: datetime) -> Decision:
            try:
                new = change(task, at)
            except TeamError:
                return Verdict.REFUSED, None, task
            if new is None:
                return Verdict.UNCHANGED, None, task
            return Verdict.DONE, new, new

        return await self._transition(task_id, decide, now)

    # -- the queue -------------------------------------------------------------------------

    async def enqueue(self, task: Task) -> None:
        t, dep = self.t.task, self.t.task_dep

        async def run(conn: AsyncConnection) -> None:
            states: Blockers = {}
            if task.blocked_by:  # the blockers' rows stay locked: none finishes unseen
                of_blockers = (self._of_team(), t.c.task_id.in_(task.blocked_by))
                if self.store.dialect == "mysql":
                    lock: Any = select(t.c.task_id, t.c.status).where(*of_blockers)
                    lock = lock.with_for_update(read=True)
                else:  # a new row version: a finish statement queued behind it runs again
                    lock = update(t).where(*of_blockers).values(seq=t.c.seq)
                    lock = lock.returning(t.c.task_id, t.c.status)
                found = {r.task_id: r.status for r in await conn.execute(lock)}
                states = {b: found.get(b) for b in task.blocked_by}
            await conn.execute(insert(t).values(**self._row(task, states)))
            if task.blocked_by:
                rows = [
                    {"team": self.team, "blocker_id": b, "task_id": task.id}
                    for b in task.blocked_by
                ]
                await conn.execute(insert(dep), rows)

        await self._tx("enqueue", run)

    def _row(self, task: Task, states: dict[str, Any]) -> dict[str, Any]:
        left = sum(1 for s in states.values() if s != TaskStatus.COMPLETED.value)
        dead = sum(1 for s in states.values() if s is None or s in _DEAD)
        return {
            "team": self.team,
            "task_id": task.id,
            "khash": self.store.key_hash(self.keys.task(task.id)),
            "seq": task.seq,
            "blockers_left": left,
            "dead_blockers": dead,
            **columns(task),
        }

    async def claim_next(
        self,
        member: str,
        lease: float,
        now: datetime,
        *,
        prefer_own: bool,
        guard: TeamGuard | None = None,
    ) -> Task | None:
        if guard is not None and not self.guards_team:
            raise TypeError("a team guard is checked by a claim on PostgreSQL only")
        claimed = await self._claim_one(member, lease, now, guard, prefer_own)
        if claimed is not None:
            return claimed
        candidate, stale = await self._look(member, now)
        if stale and any(
            t.status is TaskStatus.PENDING for t in await self._settle(now, member, SETTLE_PAGE)
        ):
            claimed = await self._claim_one(member, lease, now, guard, prefer_own)
        if claimed is None and candidate is not None:
            claimed = await self._claim_waiting(member, lease, now, guard, prefer_own, candidate)
        return claimed

    async def _look(self, member: str, now: datetime) -> tuple[str | None, bool]:
        """:data:`CANDIDATE` in one statement: a task ``member`` could claim (None: none), and
        whether an expired lease waits that it may not take."""

        async def run(conn: AsyncConnection) -> tuple[str | None, bool]:
            statement = _statement(CANDIDATE, task=self.t.task.name)
            row = (await conn.execute(statement, self._look_params(member, now))).one()
            return looked(row)

        return await self.store.transaction("board claim look", run, single=True)

    def _look_params(self, member: str, now: datetime) -> dict[str, Any]:
        return {"team": self.team, "member": member, "now": now.timestamp()}

    async def _claim_waiting(
        self,
        member: str,
        lease: float,
        now: datetime,
        guard: TeamGuard | None,
        prefer_own: bool,
        candidate: str,
    ) -> Task | None:
        """Claim ``candidate``, a task ``member`` could claim that its pick skipped: another
        transaction held its row's lock (on MariaDB any claimer whose scan merely examines a
        row, say one routed to someone else, locks it until it moves on).

        The candidate is claimed by its id, the named claim waiting for the row's lock (a task
        the member holds by then, say taken by its own concurrent claim, is renewed only with
        ``prefer_own``, as the pick would); a guarded claim (which checks the team record in its
        pick) waits for the row, then picks again. When someone else took it meanwhile, the next
        candidate is looked for, up to :data:`CLAIM_WAITS` in all.
        """
        task_id: str | None = candidate
        for _ in range(CLAIM_WAITS):
            if task_id is None:
                return None
            if guard is None:
                outcome = await self.claim(member, task_id, lease, now, renew_own=prefer_own)
                if outcome.verdict is Verdict.DONE:
                    return outcome.task
            else:
                await self._wait_for_row(task_id)
                claimed = await self._claim_one(member, lease, now, guard, prefer_own)
                if claimed is not None:
                    return claimed
            task_id = (await self._look(member, now))[0]
        return None

    async def _wait_for_row(self, task_id: str) -> None:
        """Return once no other transaction holds ``task_id``'s row (it is locked, then let go)."""
        held = _statement(_LOCK_WAIT, task=self.t.task.name)

        async def run(conn: AsyncConnection) -> None:
            await conn.execute(held, {"team": self.team, "id": task_id})

        await self._tx("claim wait", run)

    async def _claim_one(
        self,
        member: str,
        lease: float,
        now: datetime,
        guard: TeamGuard | None,
        prefer_own: bool = False,
    ) -> Task | None:
        """One transaction: the member's oldest held task (``prefer_own``: its lease renewed),
        else the oldest claimable row, skipping locked ones, claimed.

        InnoDB locks every row a locking read examines (until the commit), so the pick is
        index-ordered scans that stop at their first match (the member's own held task, the
        earliest expired lease, the oldest pending row with no blockers left: ``UNION ALL``).
        """
        pick, params = self.pick_statement(member, now, prefer_own)

        async def run(conn: AsyncConnection) -> Task | None:
            row = (await conn.execute(pick, params)).first()
            if row is None:
                return None
            task = self._decode(row)
            done = dict.fromkeys(task.blocked_by, TaskStatus.COMPLETED)  # counted by the row
            renew = row.probe == 0
            verdict = eligibility.claim_verdict(task, member, done, now, renew_own=renew)
            if not verdict.ok:  # the row disagrees with its record: repair it, claim another
                await self._repair(conn, task)
                return None
            new = eligibility.claimed_record(verdict, task, member, now, lease)
            return await self._write(conn, task, new)

        return await self._tx("claim", run)

    def pick_statement(
        self, member: str, now: datetime, prefer_own: bool = False
    ) -> tuple[TextClause, dict[str, Any]]:
        """The locking read of a claim (built once per shape) and its parameters (for ``EXPLAIN``)."""
        names = {"task": self.t.task.name, "kv": self.t.kv.name}
        own = MYSQL_OWN.format(**names) if prefer_own else ""
        params = {"team": self.team, "member": member, "now": now.timestamp()}
        return _statement(MYSQL_PICK, own=own, **names), params

    async def _repair(self, conn: AsyncConnection, task: Task) -> None:
        t = self.t.task
        await conn.execute(
            update(t).where(self._of_team(), t.c.task_id == task.id).values(**columns(task))
        )

    async def _settle(self, now: datetime, member: str | None, limit: int | None) -> list[Task]:
        """Expired leases back to pending (or failed at max attempts); with ``member``, only those
        the member may not claim (a claim takes the others)."""
        c = self.t.task.c
        expired = and_(c.status == TaskStatus.IN_PROGRESS.value, c.lease_until <= now.timestamp())
        if member is not None:
            expired = and_(
                expired,
                or_(
                    c.attempts >= c.max_attempts, and_(c.assignee.isnot(None), c.assignee != member)
                ),
            )
        stmt = self._locked_rows(expired).order_by(c.lease_until).limit(limit)
        stmt = stmt.with_for_update(skip_locked=True)

        async def run(conn: AsyncConnection) -> list[Task]:
            out = []
            for row in (await conn.execute(stmt)).all():
                task = self._decode(row)
                if task.lease_expired(now):
                    out.append(await self._write(conn, task, rules.expired(task, now)))
            return out

        return await self._tx("settle", run)

    async def claim(
        self, member: str, task_id: str, lease: float, now: datetime, *, renew_own: bool = True
    ) -> Outcome:
        """A named claim; with ``renew_own=False`` a task ``member`` holds counts as another's
        (held while its lease is live, reclaimed once it ran out), as in an anonymous claim."""

        def decide(task: Task, states: Blockers, at: datetime) -> Decision:
            verdict = eligibility.claim_verdict(task, member, states, at, renew_own=renew_own)
            if verdict.outcome is ClaimOutcome.EXHAUSTED:  # record the failure, refuse as read
                return Verdict.REFUSED, rules.expired(task, at), task
            if not verdict.ok:
                return Verdict.REFUSED, None, task
            new = eligibility.claimed_record(verdict, task, member, at, lease)
            return Verdict.DONE, new, new

        return await self._transition(task_id, decide, now, claimer=member)

    async def reap(self, now: datetime) -> list[Task]:
        return await self._settle(now, None, None)

    async def open_tasks(self) -> list[tuple[str, Task | Exception]]:
        c = self.t.task.c
        unfinished = c.status.in_([TaskStatus.PENDING.value, TaskStatus.IN_PROGRESS.value])
        stmt = self._locked_rows(unfinished).order_by(c.seq)

        async def run(conn: AsyncConnection) -> list[tuple[str, Task | Exception]]:
            return self._listed((await conn.execute(stmt)).all())

        return await self.store.transaction("board open", run, single=True)

    def _listed(self, rows: Sequence[Any]) -> list[tuple[str, Task | Exception]]:
        """Each row's task id and its decoded record, or the error that decoding it raised."""
        out: list[tuple[str, Task | Exception]] = []
        for row in rows:
            try:
                out.append((row.task_id, self._decode(row)))
            except UNREADABLE as exc:
                out.append((row.task_id, exc))
        return out

    async def rebuild(self, tasks: Sequence[Task]) -> None:
        status = {t.id: t.status.value for t in tasks}

        async def run(conn: AsyncConnection) -> None:
            await self._delete_rows(conn)
            for task in tasks:
                states = {b: status.get(b) for b in task.blocked_by}
                await conn.execute(insert(self.t.task).values(**self._row(task, states)))
                for b in task.blocked_by:
                    row = {"team": self.team, "blocker_id": b, "task_id": task.id}
                    await conn.execute(insert(self.t.task_dep).values(**row))

        await self._tx("rebuild", run)

    async def _delete_rows(self, conn: AsyncConnection) -> None:
        await conn.execute(delete(self.t.task).where(self._of_team()))
        await conn.execute(delete(self.t.task_dep).where(self.t.task_dep.c.team == self.team))

    async def drop(self) -> None:
        await self._tx("drop", self._delete_rows)

    async def size(self) -> int:
        """Rows of this team (for tests)."""

        async def run(conn: AsyncConnection) -> int:
            stmt = select(func.count()).select_from(self.t.task).where(self._of_team())
            return int(await conn.scalar(stmt) or 0)

        return await self.store.transaction("board size", run, single=True)
