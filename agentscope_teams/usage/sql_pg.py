"""The two steps of a governed model call on PostgreSQL, one statement each.

:data:`ADMIT` and :data:`FINISH` are :func:`.rules.admit` and :func:`.rules.finish` written as one
statement of data-modifying CTEs on the heads (``<prefix>usage_doc``) and rows
(``<prefix>usage_entry``) of :mod:`.sql_docs`: the heads are locked in id order
(``SELECT … FOR UPDATE``, which reads their newest versions), then, under those locks, only the
rows the step concerns are touched: what has ended is deleted through the expiry index
(``DELETE … RETURNING``, which finds nothing unless a process died or a tenant left), the caller's
tenant is read locked and written once, its reservations and lease are inserted or deleted by
name; the decision comes from the heads' totals and counts, so the work does not grow with the
calls in flight or the tenants. All in one autocommitted statement (no ``BEGIN``/``COMMIT``, one
round trip). A row is looked up by name through the primary key, which leads with it (the document
is compared as ``doc_id || ''``, which no index serves), so a planner without statistics cannot
take the expiry index for it.

One statement reads with the snapshot taken at its start, which may predate the commit of the
call that held the heads' locks before it: locked reads and writes see that call's changes, but
not a row it inserted. So the caller's tenant, found absent, is inserted ``ON CONFLICT DO
NOTHING``: if another call inserted it meanwhile, the statement writes only what it reaped and
reports ``sure`` false, and the caller runs it again (it then sees the row).

The rules' constants come in as parameters (:func:`params`), and
``tests/usage/test_pg_agreement.py`` checks the statements against :mod:`.rules` on a table of
cases. A head that does not exist yet is reported (``complete`` false): the caller inserts the
missing heads and runs the statement again.

MariaDB (10.11) keeps the locked transaction of :mod:`.sql_docs`: it has no ``UPDATE … RETURNING``
(the caller cannot learn the decision from the write) and an ``UPDATE`` reads its own table in a
subquery from a materialized copy, unlocked (the decision cannot come from locked rows inside it).
"""

from __future__ import annotations

import json
import re
from typing import Any

from sqlalchemy import BindParameter, TextClause, bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection

from ..errors import StoreError
from . import rules
from .backend import DocsUsage, Rides, now_ms
from .docs import doc_id
from .rows import entry_name
from .rules import Admission, Admitted, Refusal
from .sql_docs import SqlDocs

# The parameters, typed once. ``rpm``/``tpm``/``conc`` NULL: no limit of that kind. ``tname``,
# ``rid``: the tenant's and the call's row names (:func:`.rows.entry_name`).
_PARAMS = """
p AS (SELECT CAST(:now AS float8) AS now, CAST(:rid AS text) AS rid,
  CAST(:tokens AS bigint) AS tokens, CAST(:nanos AS bigint) AS nanos,
  CAST(:ttl AS bigint) AS ttl, CAST(:key AS text) AS key, CAST(:rpm AS float8) AS rpm,
  CAST(:tpm AS float8) AS tpm, CAST(:conc AS bigint) AS conc, CAST(:burst AS float8) AS burst,
  CAST(:tname AS text) AS tname, CAST(:win_n AS float8) AS win_n,
  CAST(:win_min AS float8) AS win_min, CAST(:bucket AS float8) AS bucket,
  CAST(:poll AS float8) AS poll, CAST(:n AS bigint) AS n)
"""

# The heads, locked in id order (their newest versions); ``gate``: every head exists. Every write
# of a row waits for ``gate`` (a one-time filter), so rows are changed only under the heads' locks.
_LOCKED = """
locked AS MATERIALIZED (
  SELECT id, CAST(doc AS jsonb) AS d FROM {t} WHERE id IN :ids ORDER BY id FOR UPDATE),
gate AS MATERIALIZED (SELECT count(*) = CAST(:n AS bigint) AS complete FROM locked)
"""

# Per budget: its limits (``ord``: its place in the admission) and totals with the expired
# reservations deleted and taken off (rules._reap: an index probe, empty unless a call died).
_BUDGETS = """
lims AS (SELECT * FROM jsonb_to_recordset(CAST(:limits AS jsonb))
  AS x(id text, ord int, mt bigint, mn bigint)),
rx AS (DELETE FROM {e} e WHERE e.doc_id IN :bids AND e.kind = 'r'
  AND e.exp <= CAST(:now AS float8) AND (SELECT complete FROM gate) RETURNING e.doc_id, e.a, e.b),
bud AS (
  SELECT l.id, m.ord, m.mt, m.mn, l.d,
    COALESCE((l.d->>'ut')::bigint, 0) AS ut, COALESCE((l.d->>'un')::bigint, 0) AS un,
    COALESCE((l.d->>'rt')::bigint, 0) - COALESCE(x.xt, 0) AS rt,
    COALESCE((l.d->>'rn')::bigint, 0) - COALESCE(x.xn, 0) AS rn, x.doc_id IS NOT NULL AS reaped
  FROM locked l JOIN lims m ON m.id = l.id LEFT JOIN (
    SELECT doc_id, CAST(sum(a) AS bigint) AS xt, CAST(sum(b) AS bigint) AS xn FROM rx
    GROUP BY doc_id) x ON x.doc_id = l.id),
refusal AS (
  SELECT * FROM (
    SELECT ord, 1 AS u, 'tokens' AS unit, mt AS lim, ut + rt AS used, ut AS settled
    FROM bud WHERE mt IS NOT NULL AND ut + rt >= mt
    UNION ALL
    SELECT ord, 2, 'nanos', mn, un + rn, un FROM bud WHERE mn IS NOT NULL AND un + rn >= mn
  ) r ORDER BY ord, u LIMIT 1),
go AS MATERIALIZED (
  SELECT g.complete AND NOT EXISTS (SELECT 1 FROM refusal) AS ok FROM gate g)
"""

# The limiter (rules.acquire), run only when no budget refuses: its clocks and counts; the stale
# tenants but the caller's deleted (an index probe below the window, which the count before
# deleting sets) and the expired leases; the caller's tenant read locked (its newest version;
# stale: its clock starts again); then the wait and the clocks a turn would set.
_LIMITER = """
lh AS (
  SELECT l.d, COALESCE((l.d->>'tat')::float8, 0) AS tat,
    COALESCE((l.d->>'ttat')::float8, 0) AS ttat, COALESCE((l.d->>'hold')::float8, 0) AS hold,
    COALESCE((l.d->>'nten')::bigint, 0) AS nten, COALESCE((l.d->>'nlease')::bigint, 0) AS nlease,
    60000 / p.rpm AS iv, CASE WHEN p.rpm IS NOT NULL THEN greatest(p.win_min,
      p.win_n * (60000 / p.rpm) * greatest(COALESCE((l.d->>'nten')::bigint, 0), 1)) END AS win
  FROM locked l CROSS JOIN p WHERE l.id = p.key AND (SELECT ok FROM go)),
tx AS (DELETE FROM {e} e WHERE e.doc_id = CAST(:key AS text) AND e.kind = 't'
  AND e.exp < (SELECT p.now - lh.win FROM lh CROSS JOIN p) AND e.name <> CAST(:tname AS text)
  RETURNING 1),
lx AS (DELETE FROM {e} e WHERE e.doc_id = CAST(:key AS text) AND e.kind = 'l'
  AND e.exp <= CAST(:now AS float8) AND EXISTS (SELECT 1 FROM lh) RETURNING 1),
me AS (SELECT e.a, e.exp FROM {e} e WHERE e.name = CAST(:tname AS text)
  AND e.doc_id || '' = CAST(:key AS text) AND e.kind = 't' AND CAST(:rpm AS float8) IS NOT NULL
  AND EXISTS (SELECT 1 FROM lh) FOR UPDATE),
lm AS (
  SELECT lh.*, me.exp IS NULL AS absent,
    CASE WHEN me.exp IS NULL OR me.exp < p.now - lh.win THEN 0 ELSE me.a END AS mine,
    lh.nten - (SELECT count(*) FROM tx) + CASE WHEN me.exp IS NULL THEN 1 ELSE 0 END AS n,
    lh.nlease - (SELECT count(*) FROM lx) AS nlease2
  FROM lh CROSS JOIN p LEFT JOIN me ON true),
lw AS (
  SELECT lm.*, greatest(0, lm.hold - p.now,
    CASE WHEN p.rpm IS NOT NULL THEN greatest(lm.tat, p.now) - p.now - lm.iv * (p.burst - 1) END,
    CASE WHEN p.rpm IS NOT NULL THEN
      greatest(lm.mine, p.now) - p.now - lm.iv * lm.n * (p.burst - 1) END,
    CASE WHEN p.tpm IS NOT NULL AND greatest(lm.ttat, p.now) - p.now > 0
      AND greatest(lm.ttat, p.now) - p.now + p.tokens * (60000 / p.tpm)
        > 60000 * p.burst / p.bucket
      THEN greatest(lm.ttat, p.now) - p.now + p.tokens * (60000 / p.tpm)
        - 60000 * p.burst / p.bucket END,
    CASE WHEN p.conc IS NOT NULL AND lm.nlease2 >= p.conc THEN p.poll END) AS wait
  FROM lm CROSS JOIN p),
lt AS (
  SELECT lw.*, lw.wait > 0 AS waits,
    CASE WHEN p.rpm IS NULL THEN lw.tat ELSE greatest(lw.tat, p.now) + lw.iv END AS tat2,
    CASE WHEN p.rpm IS NULL THEN lw.mine ELSE greatest(lw.mine, p.now) + lw.iv * lw.n END AS own2,
    CASE WHEN p.tpm IS NULL THEN lw.ttat
      ELSE greatest(lw.ttat, p.now) + p.tokens * 60000 / p.tpm END AS ttat2
  FROM lw CROSS JOIN p)
"""

# The caller's tenant written once: updated where it was read, else inserted unless another call
# inserted it since this statement's snapshot (then ``sure`` is false: nothing else is written
# but what was reaped, and the caller runs the statement again, which sees that row).
_DECIDE = """
tup AS (UPDATE {e} e SET a = CASE WHEN lt.waits THEN lt.mine ELSE lt.own2 END, exp = p.now
  FROM lt CROSS JOIN p WHERE NOT lt.absent AND p.rpm IS NOT NULL AND e.name = p.tname
    AND e.doc_id || '' = p.key AND e.kind = 't' RETURNING 1),
tin AS (INSERT INTO {e} (doc_id, kind, name, a, b, exp)
  SELECT p.key, 't', p.tname, CASE WHEN lt.waits THEN lt.mine ELSE lt.own2 END, 0, p.now
  FROM lt CROSS JOIN p WHERE lt.absent AND p.rpm IS NOT NULL ON CONFLICT DO NOTHING RETURNING 1),
decision AS MATERIALIZED (
  SELECT g.complete, r.ord, r.unit, r.lim, r.used, r.settled, lt.wait,
    NOT COALESCE(p.rpm IS NOT NULL AND lt.absent AND NOT EXISTS (SELECT 1 FROM tin), false)
      AS sure
  FROM p CROSS JOIN gate g LEFT JOIN refusal r ON true LEFT JOIN lt ON true),
x AS MATERIALIZED (
  SELECT d.*, d.complete AND d.ord IS NULL AND d.sure AND COALESCE(d.wait, 0) <= 0 AS granted
  FROM decision d),
rin AS (INSERT INTO {e} (doc_id, kind, name, a, b, exp)
  SELECT b.id, 'r', p.rid, p.tokens, p.nanos, CAST(p.now AS bigint) + p.ttl
  FROM bud b CROSS JOIN p CROSS JOIN x WHERE x.granted RETURNING 1),
lin AS (INSERT INTO {e} (doc_id, kind, name, a, b, exp)
  SELECT p.key, 'l', p.rid, 0, 0, p.now + p.ttl FROM p CROSS JOIN x
  WHERE x.granted AND p.key IS NOT NULL AND p.conc IS NOT NULL RETURNING 1),
new AS (
  SELECT b.id, b.d || jsonb_build_object('ut', b.ut, 'un', b.un,
      'rt', b.rt + CASE WHEN x.granted THEN p.tokens ELSE 0 END,
      'rn', b.rn + CASE WHEN x.granted THEN p.nanos ELSE 0 END) AS doc
  FROM bud b CROSS JOIN p CROSS JOIN x WHERE x.complete AND (x.granted OR b.reaped)
  UNION ALL
  SELECT p.key, CASE WHEN x.granted THEN lt.d || jsonb_build_object(
      'tat', lt.tat2, 'ttat', lt.ttat2, 'hold', lt.hold,
      'nten', CASE WHEN p.rpm IS NULL THEN lt.nten ELSE lt.n END,
      'nlease', lt.nlease2 + CASE WHEN p.conc IS NULL THEN 0 ELSE 1 END,
      'last', jsonb_build_array(p.rid, lt.tat2 - lt.tat, lt.own2 - lt.mine, lt.ttat2 - lt.ttat))
    ELSE lt.d || jsonb_build_object('tat', lt.tat, 'ttat', lt.ttat, 'hold', lt.hold,
      'nten', CASE WHEN p.rpm IS NULL THEN lt.nten WHEN x.sure THEN lt.n ELSE lt.n - 1 END,
      'nlease', lt.nlease2) END
  FROM lt CROSS JOIN p CROSS JOIN x),
up AS (UPDATE {t} AS t SET doc = CAST(new.doc AS text) FROM new WHERE t.id = new.id RETURNING 1)
SELECT complete, ord, unit, lim, used, settled, wait, sure,
  (SELECT count(*) FROM up) + (SELECT count(*) FROM rx) + (SELECT count(*) FROM tx)
  + (SELECT count(*) FROM lx) + (SELECT count(*) FROM tup) + (SELECT count(*) FROM tin)
  + (SELECT count(*) FROM rin) + (SELECT count(*) FROM lin)
FROM x
"""

#: :func:`.rules.admit` in one statement (``{t}``: the heads' table, ``{e}``: the rows').
#: Result row: complete (every head exists), the refusing budget's place (1-based, None: none),
#: unit, limit, used and settled, the ms to wait (None or <= 0: admitted), sure (False: run it
#: again), the rows written.
ADMIT = "WITH" + ",".join([_PARAMS, _LOCKED, _BUDGETS, _LIMITER, _DECIDE])

#: :func:`.rules.finish` in one statement: settle each budget (``:bids``: its reservation row
#: deleted) and end the lease on the limiter (``key``), correcting its token clock by ``:delta``
#: tokens; with ``:unsent`` (:func:`.rules.give_back`) undo the admission's turn if it is still
#: the last one taken. Result: complete, the rows written.
FINISH = (
    "WITH"
    + ",".join([_PARAMS, _LOCKED])
    + """,
rd AS (DELETE FROM {e} e WHERE e.name = CAST(:rid AS text) AND e.doc_id || '' IN :bids
  AND e.kind = 'r' AND (SELECT complete FROM gate) RETURNING e.doc_id, e.a, e.b),
ld AS (DELETE FROM {e} e WHERE e.name = CAST(:rid AS text) AND e.doc_id || '' = CAST(:key AS text)
  AND e.kind = 'l' AND (SELECT complete FROM gate) RETURNING 1),
lk AS (
  SELECT l.d, CAST(:unsent AS boolean) AND l.d->'last'->>0 = p.rid AS undo,
    COALESCE((l.d->>'ttat')::float8, 0) AS ttat
  FROM locked l CROSS JOIN p WHERE l.id = p.key AND (SELECT complete FROM gate)),
tu AS (UPDATE {e} e SET a = e.a - (lk.d->'last'->>2)::float8 FROM lk
  WHERE lk.undo AND e.name = CAST(:tname AS text) AND e.doc_id || '' = CAST(:key AS text)
    AND e.kind = 't' RETURNING 1),
new AS (
  SELECT l.id, l.d || jsonb_build_object(
      'ut', COALESCE((l.d->>'ut')::bigint, 0) + p.tokens,
      'un', COALESCE((l.d->>'un')::bigint, 0) + p.nanos,
      'rt', COALESCE((l.d->>'rt')::bigint, 0) - COALESCE(CAST(r.a AS bigint), 0),
      'rn', COALESCE((l.d->>'rn')::bigint, 0) - COALESCE(CAST(r.b AS bigint), 0)) AS doc
  FROM locked l CROSS JOIN p LEFT JOIN rd r ON r.doc_id = l.id
  WHERE l.id IN :bids AND (SELECT complete FROM gate)
  UNION ALL
  SELECT p.key, CASE WHEN lk.undo THEN (lk.d || jsonb_build_object(
      'tat', COALESCE((lk.d->>'tat')::float8, 0) - (lk.d->'last'->>1)::float8,
      'ttat', lk.ttat - (lk.d->'last'->>3)::float8,
      'nlease', COALESCE((lk.d->>'nlease')::bigint, 0) - (SELECT count(*) FROM ld))) - 'last'
     ELSE lk.d || jsonb_build_object(
      'nlease', COALESCE((lk.d->>'nlease')::bigint, 0) - (SELECT count(*) FROM ld),
      'ttat', CASE WHEN p.tpm IS NOT NULL AND CAST(:delta AS bigint) <> 0
        THEN greatest(lk.ttat + CAST(:delta AS bigint) * 60000 / p.tpm, p.now)
        ELSE lk.ttat END) END
  FROM lk CROSS JOIN p),
up AS (UPDATE {t} AS t SET doc = CAST(new.doc AS text) FROM new WHERE t.id = new.id RETURNING 1)
SELECT g.complete, (SELECT count(*) FROM up) + (SELECT count(*) FROM rd)
  + (SELECT count(*) FROM ld) + (SELECT count(*) FROM tu) FROM gate g
"""
)


def params(a: Admission, now: int, tokens: int, nanos: int) -> dict[str, Any]:
    """The statements' parameters: the admission, the rules' constants, ``tokens``/``nanos``
    (the reservation for :data:`ADMIT`, the use for :data:`FINISH`)."""
    r = a.rates
    key = doc_id(a.key) if a.key is not None else None
    ids = [doc_id(b.name) for b in a.limits] + ([key] if key else [])
    limits = [
        {"id": doc_id(b.name), "ord": i, "mt": b.max_tokens, "mn": b.max_nanos}
        for i, b in enumerate(a.limits, 1)
    ]
    return {
        "now": float(now),
        "rid": entry_name(a.rid),
        "tokens": tokens,
        "nanos": nanos,
        "ttl": rules.RESERVATION_TTL_MS,
        "key": key,
        "rpm": r.rpm or None,
        "tpm": r.tpm or None,
        "conc": r.concurrent or None,
        "burst": float(r.burst),
        "tname": entry_name(a.tenant),
        "win_n": float(rules.TENANT_WINDOW_INTERVALS),
        "win_min": rules.TENANT_WINDOW_MIN_MS,
        "bucket": float(rules.TOKEN_BUCKET_MINUTE_FRACTION),
        "poll": rules.CONCURRENCY_POLL_MS,
        "n": len(set(ids)),
        "ids": sorted(set(ids)),
        "limits": json.dumps(limits),
        "bids": [doc_id(b.name) for b in a.limits] or ["-"],
    }


def _names(sql: str) -> frozenset[str]:
    return frozenset(re.findall(r"(?<![:\w]):(\w+)", sql))


#: How often a step runs again when its tenant's row appeared meanwhile (each run sees the rows
#: committed before it: a second run finds it unless the tenant went stale and came back between).
_AGAIN = 3


class PgUsage:
    """:class:`~.backend.UsageBackend` on PostgreSQL: :data:`ADMIT` before a call and
    :data:`FINISH` after it, one autocommitted statement each; the rare steps (a 429's hold-off,
    a read) keep the locked documents of :mod:`.sql_docs`."""

    #: Each step is a statement of its own (:class:`~.backend.Rides`: Redis only).
    rides: Rides | None = None

    def __init__(self, docs: SqlDocs) -> None:
        self.docs = docs
        self.locked = DocsUsage(docs)
        self.settles = self.locked.settles
        #: The rows (heads and entries) the last step wrote: the same with 1 or 1,000 calls in
        #: flight (tests/usage/test_rows_in_flight.py).
        self.last_written = 0
        ids: BindParameter[Any] = bindparam("ids", expanding=True)
        admit_sql = ADMIT.format(t=docs.table, e=docs.entries)
        finish_sql = FINISH.format(t=docs.table, e=docs.entries)
        bids: BindParameter[Any] = bindparam("bids", expanding=True)
        self._admit = text(admit_sql).bindparams(ids, bids)
        self._finish = text(finish_sql).bindparams(ids, bids)
        self._admit_names, self._finish_names = _names(admit_sql), _names(finish_sql)

    async def _run(
        self, op: str, stmt: TextClause, values: dict[str, Any], a: Admission
    ) -> tuple[Any, ...]:
        async def once(conn: AsyncConnection) -> tuple[Any, ...]:
            return tuple((await conn.execute(stmt, values)).one())

        row = await self.docs.store.transaction(op, once, write=True, single=True)
        if not row[0]:  # a budget or limiter never written: create its head, then decide
            await self.docs.create(a.names)
            row = await self.docs.store.transaction(op, once, write=True, single=True)
        for _ in range(_AGAIN):  # another call inserted this tenant's row since the snapshot
            if row[7:8] != (False,):
                break
            row = await self.docs.store.transaction(op, once, write=True, single=True)
        else:
            if row[7:8] == (False,):
                raise StoreError(
                    f"{op}: the row of tenant {a.tenant!r} on rate limit {a.key!r} appeared "
                    f"meanwhile {_AGAIN + 1} times running; nothing was reserved, try the call again"
                )
        self.last_written = int(row[-1])
        return row

    async def admit(self, a: Admission) -> Admitted:
        return await self.admit_at(a, now_ms())

    async def admit_at(self, a: Admission, now: int) -> Admitted:
        """:meth:`admit` at time ``now`` (ms)."""
        values = params(a, now, a.tokens, a.nanos)
        found = {k: values[k] for k in self._admit_names}
        row = await self._run("admit model call", self._admit, found, a)
        if row[1] is not None:
            numbers = (int(row[3]), int(row[4]), int(row[5]))
            return Admitted(refusal=Refusal(a.limits[row[1] - 1].name, row[2], *numbers))
        wait = float(row[6] or 0.0)
        return Admitted(wait_ms=wait if wait > 0 else 0.0)

    async def finish(self, a: Admission, tokens: int, nanos: int) -> None:
        await self.finish_at(a, tokens, nanos, now_ms())

    async def give_back(self, a: Admission) -> None:
        await self.finish_at(a, 0, 0, now_ms(), unsent=True)

    async def finish_at(
        self, a: Admission, tokens: int, nanos: int, now: int, unsent: bool = False
    ) -> None:
        """:meth:`finish` at time ``now`` (ms); ``unsent``: :meth:`give_back`."""
        values = params(a, now, tokens, nanos)
        values["delta"] = tokens - a.tokens if tokens else 0
        values["unsent"] = unsent
        found = {k: values[k] for k in self._finish_names}
        await self._run("finish model call", self._finish, found, a)

    async def renew(self, a: Admission) -> None:
        await self.locked.renew(a)  # rare (a call in flight for minutes): the locked documents

    async def hold_off(self, key: str, wait_ms: float) -> None:
        await self.locked.hold_off(key, wait_ms)

    async def read(self, name: str) -> rules.Doc | None:
        return await self.locked.read(name)
