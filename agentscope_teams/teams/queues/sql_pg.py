"""The PostgreSQL claim and finish: one statement each (see :mod:`.sql`).

The claim's probes are CTEs, each ``LIMIT 1 FOR UPDATE SKIP LOCKED`` over a partial index
(:mod:`.sql_tables`): ``own`` (with ``prefer_own``: the member's oldest held task, its lease
renewed), ``expired`` (the earliest expired lease it may take), then the pending tasks with no
blockers left, routed to nobody (free) or to the member, each kind read through an index of its
own, so that tasks routed to other members are never read: ``free`` (the oldest free task ahead
of the member's oldest routed one, whose ``seq`` a sub-select reads unlocked), ``mine`` (the
member's oldest routed task), ``later`` (the oldest free task: those ahead were taken
meanwhile). A probe runs only when those before it found nothing (a ``NOT EXISTS`` on them,
which the planner makes a one-time filter above the index scan), so at most one row is locked
(a claim never locks a row it does not take: a concurrent claimer never skips a task nobody
takes) and the plan never sorts or scans the candidates: ``EXPLAIN`` in ``bench/RESULTS.md``.
The claim takes the lowest ``seq`` among the free and routed-to-me tasks that no concurrent
claim holds; the one exception is the member's oldest routed task held by another claim of the
same member, when a free task between it and the member's next routed one waits for the next
claim. ``moved`` updates the picked row's columns (one more attempt unless renewed, the new
owner and lease), finding it by its whole key (the pick's task id as a one-time sub-select: joined to the pick alone, a planner
without statistics scanned every task of the team against it); the outer
``UPDATE`` of ``p_kv`` rewrites the JSON record as
:func:`~agentscope_teams.teams.rules.eligibility.claimed_record` would (a reclaim first appends
the ``lease_expired`` event of :func:`~..rules.transitions.expired`; a renewal only moves the
lease) with version + 1, and returns it; the record is parsed once (``convert_from(value)::jsonb``
in a sub-select kept apart by ``OFFSET 0``: PostgreSQL evaluates a repeated expression each time,
and an ``UPDATE`` re-reads its target row's latest version, so the parse sees the row as locked).
The board's conformance tests run the same scenarios through this statement and through the
generic path. Each statement's text is built once per shape (:func:`_statement`).

The finish (complete or fail) is one statement too: ``cur`` locks the task row and its record
(``FOR UPDATE``: read committed then returns their latest versions) and parses the record once,
``moved`` updates the row only if the member owns it in progress (and, for a completion, the record
declares no result schema or the board checked the data against it), ``deps`` moves the
dependents' counters, ``written`` rewrites the parsed record as
:func:`~..rules.transitions.finish` would; the statement returns the written record, or else the
record as read, which the queue turns into "unchanged" (a repeat by the owner) or "refused" (the
board raises the rule's error for it, or validates the data and finishes again). The ``UPDATE`` s
lock and re-check the row (read committed), so concurrent finishers write it once. ``deps`` reads
the dependents as of the statement's start, so when the task row changed after that (``cur``
waited for a transaction that wrote it: another finish, or the enqueue of a new dependent, which
rewrites its blockers' rows for this) the finish writes nothing and runs again
(:data:`STALE_AGAIN`), then seeing that dependent. A finish that wrote then wakes the team's
signal channel (``pg_notify``, on the same connection), so the team client sends no signal of
its own (:attr:`~..board.TaskBoard.signals_finish`); the wake-ups of one process are coalesced
per channel (:class:`~agentscope_teams.store.sql.signals.Wakes`: a finish that committed while
another's notification is queued and not yet started sends none). Not in the finish statement:
a transaction that notifies holds PostgreSQL's one notify-queue lock from its pre-commit until it
ends, across its WAL flush, so notifying finishes committed one at a time
(no group commit: 3-4x fewer tasks/s at 16 claimers, ``bench/RESULTS.md``); a statement of its
own writes no WAL and holds that lock for microseconds.

Both run on the store's asyncpg connection, as does the open board's read (:meth:`~agentscope_teams.store.sql.SqlStore.with_driver`),
prepared once per connection: no SQLAlchemy compile, result proxy or parameter processing per call.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from functools import cached_property, lru_cache
from typing import Any, NamedTuple

from pydantic import TypeAdapter
from sqlalchemy import TextClause, text

from ...store.sql import numbered
from ..rules.models import Task, TaskStatus
from .base import Finish, Outcome, TeamChanged, TeamGuard, Verdict
from .sql import CANDIDATE, SqlBoardQueue, looked

_DATETIME: TypeAdapter[datetime] = TypeAdapter(datetime)
#: The member's own held task (``prefer_own``: its lease is renewed, probe 0), probed first.
_OWN = """own AS (
  SELECT task_id, khash, status AS was, owner AS was_owner, 0 AS probe FROM {task}
  WHERE team = :team AND status = 'in_progress' AND owner = :member {guard}
  ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED
), """

_CLAIM = """
WITH {own}expired AS (
  SELECT task_id, khash, status AS was, owner AS was_owner, 1 AS probe FROM {task}
  WHERE team = :team AND status = 'in_progress' AND lease_until <= :now
    AND attempts < max_attempts AND (assignee IS NULL OR assignee = :member) {guard} {after_own}
  ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED
), free AS (
  SELECT task_id, khash, status AS was, owner AS was_owner, 2 AS probe FROM {task}
  WHERE team = :team AND status = 'pending' AND blockers_left = 0 AND dead_blockers = 0
    AND assignee IS NULL AND seq < COALESCE((
      SELECT seq FROM {task}
      WHERE team = :team AND status = 'pending' AND blockers_left = 0 AND dead_blockers = 0
        AND assignee = :member
      ORDER BY seq LIMIT 1), 9223372036854775807) {guard} {after_own}
    AND NOT EXISTS (SELECT 1 FROM expired)
  ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED
), mine AS (
  SELECT task_id, khash, status AS was, owner AS was_owner, 3 AS probe FROM {task}
  WHERE team = :team AND status = 'pending' AND blockers_left = 0 AND dead_blockers = 0
    AND assignee = :member {guard} {after_own}
    AND NOT EXISTS (SELECT 1 FROM expired) AND NOT EXISTS (SELECT 1 FROM free)
  ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED
), later AS (
  SELECT task_id, khash, status AS was, owner AS was_owner, 4 AS probe FROM {task}
  WHERE team = :team AND status = 'pending' AND blockers_left = 0 AND dead_blockers = 0
    AND assignee IS NULL {guard} {after_own}
    AND NOT EXISTS (SELECT 1 FROM expired) AND NOT EXISTS (SELECT 1 FROM free)
    AND NOT EXISTS (SELECT 1 FROM mine)
  ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED
), pick AS (
  {own_pick}SELECT * FROM expired UNION ALL SELECT * FROM free UNION ALL SELECT * FROM mine
  UNION ALL SELECT * FROM later
), moved AS (
  UPDATE {task} t
  SET status = 'in_progress', owner = :member, lease_until = :until,
      attempts = t.attempts + CASE WHEN pick.probe = 0 THEN 0 ELSE 1 END
  FROM pick
  WHERE t.team = :team AND t.task_id = (SELECT task_id FROM pick) AND t.task_id = pick.task_id
  RETURNING t.khash, t.attempts, t.max_attempts, pick.was, pick.was_owner, pick.probe
)
UPDATE {kv} k
SET version = k.version + 1, nparts = 0, value = (SELECT convert_to((
  r.j || CASE WHEN m.probe = 0 THEN jsonb_build_object(
    'lease_seconds', CAST(:lease AS double precision),
    'lease_expires_at', CAST(:until_iso AS text), 'updated_at', CAST(:now_iso AS text))
  ELSE jsonb_build_object(
    'status', 'in_progress', 'owner', CAST(:member AS text), 'attempts', m.attempts,
    'lease_seconds', CAST(:lease AS double precision),
    'lease_expires_at', CAST(:until_iso AS text), 'updated_at', CAST(:now_iso AS text),
    'history', (r.j -> 'history')
      || CASE WHEN m.was = 'in_progress' THEN jsonb_build_array(jsonb_build_object(
           'at', CAST(:now_iso AS text), 'actor', 'board', 'action', 'lease_expired',
           'detail', '''' || m.was_owner || ''' stopped renewing its lease; back to pending'))
         ELSE '[]'::jsonb END
      || jsonb_build_array(jsonb_build_object(
           'at', CAST(:now_iso AS text), 'actor', CAST(:member AS text), 'action', 'claimed',
           'detail', 'attempt ' || m.attempts || ' of ' || m.max_attempts))
  ) END)::text, 'UTF8')
  FROM (SELECT convert_from(k.value, 'UTF8')::jsonb AS j OFFSET 0) r)
FROM moved m
WHERE k.khash = m.khash
RETURNING k.value, k.version
"""


#: How often a finish runs again when its task row changed after the statement's snapshot.
STALE_AGAIN = 8

_FINISH = """
WITH cur AS MATERIALIZED (
  SELECT t.khash, convert_from(k.value, 'UTF8')::jsonb AS j,
    t.xmin = (SELECT s.xmin FROM {task} s WHERE s.team = :team AND s.task_id = :id) AS fresh
  FROM {task} t JOIN {kv} k ON k.khash = t.khash
  WHERE t.team = :team AND t.task_id = :id AND k.nparts = 0 {guard}
  FOR UPDATE OF t, k
), moved AS (
  UPDATE {task} t SET status = :status, lease_until = NULL
  FROM cur c
  WHERE t.team = :team AND t.task_id = :id AND t.status = 'in_progress' AND t.owner = :member
    AND (:checked OR :status <> 'completed' OR c.j ->> 'result_schema_json' IS NULL) AND c.fresh
  RETURNING t.khash
), deps AS (
  UPDATE {task} d
  SET blockers_left = d.blockers_left - :done, dead_blockers = d.dead_blockers + 1 - :done
  WHERE d.team = :team AND EXISTS (SELECT 1 FROM moved)
    AND d.task_id IN (SELECT task_id FROM {dep} WHERE team = :team AND blocker_id = :id)
), written AS (
  UPDATE {kv} k
  SET version = k.version + 1, nparts = 0, value = convert_to((
    c.j || jsonb_build_object(
      'status', CAST(:status AS text), 'lease_expires_at', CAST(NULL AS text),
      'updated_at', CAST(:now_iso AS text), CAST(:field AS text), CAST(:text AS text),
      'history', (c.j -> 'history') || jsonb_build_array(
        jsonb_build_object('at', CAST(:now_iso AS text), 'actor', CAST(:member AS text),
                           'action', CAST(:status AS text), 'detail', CAST(:detail AS text))))
    || CASE WHEN CAST(:data AS text) IS NULL THEN '{{}}'::jsonb
            ELSE jsonb_build_object('result_data_json', CAST(:data AS text)) END
  )::text, 'UTF8')
  FROM moved m, cur c
  WHERE k.khash = m.khash
  RETURNING k.value, k.version, k.nparts
)
SELECT TRUE AS done, TRUE AS guarded, FALSE AS stale, :id AS task_id, value, version, nparts
FROM written
UNION ALL
SELECT FALSE, {guarded}, EXISTS (SELECT 1 FROM cur WHERE NOT fresh), t.task_id, k.value,
  k.version, k.nparts
FROM {task} t JOIN {kv} k ON k.khash = t.khash
WHERE t.team = :team AND t.task_id = :id AND NOT EXISTS (SELECT 1 FROM written)
"""


#: The team record still at the version the caller checked the member against (see TeamGuard).
_GUARD = "AND EXISTS (SELECT 1 FROM {kv} g WHERE g.khash = :guard_h AND g.version = :guard_v)"
_GUARDED = "EXISTS (SELECT 1 FROM {kv} g WHERE g.khash = :guard_h AND g.version = :guard_v)"


#: The unfinished tasks with their records, oldest first.
_OPEN = """
SELECT t.task_id, k.value, k.version, k.nparts FROM {task} t JOIN {kv} k ON k.khash = t.khash
WHERE t.team = :team AND t.status IN ('pending', 'in_progress') ORDER BY t.seq
"""


def _iso(at: datetime) -> str:
    return str(_DATETIME.dump_python(at, mode="json"))


@lru_cache(maxsize=256)
def _statement(template: str, **parts: str) -> TextClause:
    """``template`` with its tables and optional parts filled in: built once per shape."""
    return text(template.format(**parts))


@lru_cache(maxsize=256)
def _numbered(template: str, **parts: str) -> tuple[str, tuple[str, ...]]:
    """``template`` filled in as :func:`_statement`, with numbered parameters for asyncpg and
    their names in order: built once per shape."""
    return numbered(template.format(**parts))


async def _fetch(conn: Any, shape: tuple[str, tuple[str, ...]], params: dict[str, Any]) -> Any:
    """The first row of ``shape`` run with ``params`` on the asyncpg connection ``conn``."""
    sql, names = shape
    return await conn.fetchrow(sql, *[params[n] for n in names])


class PostgresBoardQueue(SqlBoardQueue):
    """:class:`SqlBoardQueue` whose claim (with ``prefer_own`` too) and finish are one statement
    each (autocommit: no BEGIN/COMMIT) on the store's asyncpg connection, prepared once per
    connection, guarded by the team record's version when the caller passes a guard; a finish
    that writes then wakes the team's waiters (one ``pg_notify`` on the same connection)."""

    guards_team = True
    signals_finish = True

    @cached_property
    def _channel(self) -> str:
        """The team's signal channel (its key checked and hashed once per queue)."""
        return self.store.signal_channel(self.keys.signal())

    def _guard(self, guard: TeamGuard | None, params: dict[str, Any]) -> dict[str, str]:
        """The SQL of ``guard`` for the statements' placeholders (its parameters into ``params``)."""
        if guard is None:
            return {"guard": "", "guarded": "TRUE"}
        params.update(guard_h=self.store.key_hash(guard.key), guard_v=guard.version)
        kv = self.t.kv.name
        return {"guard": _GUARD.format(kv=kv), "guarded": _GUARDED.format(kv=kv)}

    def _claim_shape(
        self, member: str, lease: float, now: datetime, guard: TeamGuard | None, prefer_own: bool
    ) -> tuple[dict[str, str], dict[str, Any]]:
        """The parts that fill :data:`_CLAIM` in for this shape, and the claim's parameters."""
        until = now + timedelta(seconds=lease)
        params: dict[str, Any] = {
            "team": self.team,
            "member": member,
            "now": now.timestamp(),
            "until": until.timestamp(),
            "lease": lease,
            "until_iso": _iso(until),
            "now_iso": _iso(now),
        }
        task = self.t.task.name
        parts = self._guard(guard, params)
        if prefer_own:
            parts.update(
                own=_OWN.format(task=task, guard=parts["guard"]),
                own_pick="SELECT * FROM own UNION ALL ",
                after_own="AND NOT EXISTS (SELECT 1 FROM own)",
            )
        else:
            parts.update(own="", own_pick="", after_own="")
        return {"task": task, "kv": self.t.kv.name, **parts}, params

    def claim_statement(
        self,
        member: str,
        lease: float,
        now: datetime,
        guard: TeamGuard | None = None,
        prefer_own: bool = False,
    ) -> tuple[TextClause, dict[str, Any]]:
        """The claim statement of this shape (built once) and its parameters (for ``EXPLAIN``)."""
        parts, params = self._claim_shape(member, lease, now, guard, prefer_own)
        return _statement(_CLAIM, **parts), params

    async def _claim_one(
        self,
        member: str,
        lease: float,
        now: datetime,
        guard: TeamGuard | None,
        prefer_own: bool = False,
    ) -> Task | None:
        parts, params = self._claim_shape(member, lease, now, guard, prefer_own)
        shape = _numbered(_CLAIM, **parts)

        async def run(conn: Any) -> Task | None:
            row = await _fetch(conn, shape, params)
            return None if row is None else Task.from_bytes(row[0], row[1])

        return await self.store.with_driver("board claim", run)

    async def _look(self, member: str, now: datetime) -> tuple[str | None, bool]:
        """:data:`~.sql.CANDIDATE` as one statement on the asyncpg connection (autocommit)."""
        shape = _numbered(CANDIDATE, task=self.t.task.name)
        params = self._look_params(member, now)

        async def run(conn: Any) -> tuple[str | None, bool]:
            return looked(await _fetch(conn, shape, params))

        return await self.store.with_driver("board claim look", run)

    def _finish_params(
        self, member: str, task_id: str, how: Finish, now: datetime
    ) -> dict[str, Any]:
        completed = how.status is TaskStatus.COMPLETED
        return {
            "team": self.team,
            "id": task_id,
            "member": member,
            "status": how.status.value,
            "done": int(completed),
            "checked": how.checked,
            "field": "result" if completed else "error",
            "text": how.text,
            "detail": how.detail,
            "data": None if how.data is None or not completed else json.dumps(how.data),
            "now_iso": _iso(now),
        }

    async def finish(
        self, member: str, task_id: str, how: Finish, now: datetime, guard: TeamGuard | None = None
    ) -> Outcome:
        """One statement (module docs); with a stale ``guard`` nothing is written and
        :class:`TeamChanged` is raised (also when the task is missing: the caller retries
        unguarded and learns which). A finish that wrote wakes the team's waiters."""
        params = self._finish_params(member, task_id, how, now)
        t = self.t
        parts = self._guard(guard, params)
        shape = _numbered(_FINISH, task=t.task.name, kv=t.kv.name, dep=t.task_dep.name, **parts)
        channel = self._channel
        wakes = self.store.wakes

        async def run(conn: Any) -> Any:
            row = await _fetch(conn, shape, params)
            for _ in range(STALE_AGAIN):
                if row is None or not row["stale"]:
                    break
                row = await _fetch(conn, shape, params)
            if row is not None and row["done"]:
                await wakes.after_commit(conn, channel)
            return row

        row = await self.store.with_driver("board finish", run)
        if guard is not None and (row is None or not row["guarded"]):
            raise TeamChanged(f"team {self.keys.team_id!r} changed since it was read")
        if row is None:
            return Outcome(Verdict.MISSING)
        task = self._decode(_Row(row["task_id"], row["value"], row["version"], row["nparts"]))
        if row["done"]:
            return Outcome(Verdict.DONE, task)
        if task.status is how.status and task.owner == member:
            return Outcome(Verdict.UNCHANGED, task)
        return Outcome(Verdict.REFUSED, task)

    async def open_tasks(self) -> list[tuple[str, Task | Exception]]:
        """The unfinished tasks' records in ``seq`` order: one statement on the driver's
        connection (the step of a member's wake-up reads it)."""
        sql, _ = _numbered(_OPEN, task=self.t.task.name, kv=self.t.kv.name)

        async def run(conn: Any) -> list[Any]:
            return list(await conn.fetch(sql, self.team))

        rows = await self.store.with_driver("board open", run)
        return self._listed([_Row(*row) for row in rows])


class _Row(NamedTuple):
    """A record row as :meth:`SqlBoardQueue._decode` reads it."""

    task_id: str
    value: bytes
    version: int
    nparts: int
