"""The PostgreSQL claim: one statement picks, moves and rewrites a task (see :mod:`.queue_sql`).

``pick`` locks the oldest claimable row (expired leases first) with ``FOR UPDATE SKIP LOCKED``;
``moved`` updates its columns (one more attempt, the new owner and lease); the outer ``UPDATE`` of
``p_kv`` rewrites the JSON record as :func:`~agentscope_teams.teams.eligibility.claimed_record`
would (a reclaim first appends the ``lease_expired`` event of :func:`~.rules.expired`) with version
+ 1, and returns it. The board's conformance tests run the same scenarios through this statement
and through the generic path.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from .models import Task
from .queue_sql import SqlBoardQueue

_DATETIME: TypeAdapter[datetime] = TypeAdapter(datetime)

_CLAIM = """
WITH pick AS (
  SELECT task_id, khash, status AS was, owner AS was_owner FROM {task}
  WHERE team = :team
    AND ((status = 'pending' AND blockers_left = 0 AND dead_blockers = 0)
         OR (status = 'in_progress' AND lease_until <= :now AND attempts < max_attempts))
    AND (assignee IS NULL OR assignee = :member)
  ORDER BY status = 'pending', seq
  LIMIT 1
  FOR UPDATE SKIP LOCKED
), moved AS (
  UPDATE {task} t
  SET status = 'in_progress', owner = :member, attempts = t.attempts + 1, lease_until = :until
  FROM pick
  WHERE t.team = :team AND t.task_id = pick.task_id
  RETURNING t.khash, t.attempts, t.max_attempts, pick.was, pick.was_owner
)
UPDATE {kv} k
SET version = k.version + 1, nparts = 0, value = convert_to((
  convert_from(k.value, 'UTF8')::jsonb || jsonb_build_object(
    'status', 'in_progress', 'owner', CAST(:member AS text), 'attempts', m.attempts,
    'lease_seconds', CAST(:lease AS double precision),
    'lease_expires_at', CAST(:until_iso AS text), 'updated_at', CAST(:now_iso AS text),
    'history', (convert_from(k.value, 'UTF8')::jsonb -> 'history')
      || CASE WHEN m.was = 'in_progress' THEN jsonb_build_array(jsonb_build_object(
           'at', CAST(:now_iso AS text), 'actor', 'board', 'action', 'lease_expired',
           'detail', '''' || m.was_owner || ''' stopped renewing its lease; back to pending'))
         ELSE '[]'::jsonb END
      || jsonb_build_array(jsonb_build_object(
           'at', CAST(:now_iso AS text), 'actor', CAST(:member AS text), 'action', 'claimed',
           'detail', 'attempt ' || m.attempts || ' of ' || m.max_attempts))
  ))::text, 'UTF8')
FROM moved m
WHERE k.khash = m.khash
RETURNING k.value, k.version
"""


def _iso(at: datetime) -> str:
    return str(_DATETIME.dump_python(at, mode="json"))


class PostgresBoardQueue(SqlBoardQueue):
    """:class:`SqlBoardQueue` whose claim is one statement (autocommit: no BEGIN/COMMIT)."""

    async def _claim_one(self, member: str, lease: float, now: datetime) -> Task | None:
        statement = text(_CLAIM.format(task=self.t.task.name, kv=self.t.kv.name))
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

        async def run(conn: AsyncConnection) -> Task | None:
            row = (await conn.execute(statement, params)).first()
            return None if row is None else Task.from_bytes(bytes(row.value), int(row.version))

        return await self.store._run("board claim", run, write=True, single=True)
