"""The two steps of a governed model call on PostgreSQL, one statement each.

:data:`ADMIT` and :data:`FINISH` are :func:`.rules.admit` and :func:`.rules.finish` written as one
``UPDATE … FROM`` with CTEs on the JSON documents of ``<prefix>usage_doc`` (:mod:`.sql_docs`): the
rows are locked in id order (``SELECT … FOR UPDATE``, which reads their newest versions), the
decision and the new documents are computed from them, and the changed rows are written, all in one
autocommitted statement (no ``BEGIN``/``COMMIT``, one round trip). The rules' constants come in as
parameters (:func:`admit_params`), and ``tests/usage/test_pg_agreement.py`` checks the statement
against :mod:`.rules` on a table of cases. A document that does not exist yet is reported
(``found`` < the names asked): the caller inserts the missing rows and runs the statement again.

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

from . import rules
from .backend import DocsUsage, Rides, now_ms
from .docs import doc_id
from .rules import Admission, Admitted, Refusal
from .sql_docs import SqlDocs

# The parameters, typed once. ``rpm``/``tpm``/``conc`` NULL: no limit of that kind.
_PARAMS = """
p AS (SELECT CAST(:now AS float8) AS now, CAST(:rid AS text) AS rid,
  CAST(:tokens AS bigint) AS tokens, CAST(:nanos AS bigint) AS nanos,
  CAST(:ttl AS bigint) AS ttl, CAST(:key AS text) AS key, CAST(:rpm AS float8) AS rpm,
  CAST(:tpm AS float8) AS tpm, CAST(:conc AS bigint) AS conc, CAST(:burst AS float8) AS burst,
  CAST(:tenant AS text) AS tenant, CAST(:win_n AS float8) AS win_n,
  CAST(:win_min AS float8) AS win_min, CAST(:bucket AS float8) AS bucket,
  CAST(:poll AS float8) AS poll, CAST(:n AS bigint) AS n)
"""

_LOCKED = """
locked AS (SELECT id, CAST(doc AS jsonb) AS d FROM {t} WHERE id IN :ids ORDER BY id FOR UPDATE)
"""

# Per budget: its limits (``ord``: its place in the admission), totals with the expired
# reservations taken off (rules._reap), and the live reservations.
_BUDGETS = """
lims AS (SELECT * FROM jsonb_to_recordset(CAST(:limits AS jsonb))
  AS x(id text, ord int, mt bigint, mn bigint)),
bud AS (
  SELECT l.id, m.ord, m.mt, m.mn, l.d,
    COALESCE((l.d->>'ut')::bigint, 0) AS ut, COALESCE((l.d->>'un')::bigint, 0) AS un,
    COALESCE((l.d->>'rt')::bigint, 0) - COALESCE(e.xt, 0) AS rt,
    COALESCE((l.d->>'rn')::bigint, 0) - COALESCE(e.xn, 0) AS rn,
    COALESCE(e.live, '{{}}'::jsonb) AS res
  FROM locked l JOIN lims m ON m.id = l.id CROSS JOIN p
  LEFT JOIN LATERAL (
    SELECT sum((v->>0)::bigint) FILTER (WHERE (v->>2)::float8 <= p.now) AS xt,
      sum((v->>1)::bigint) FILTER (WHERE (v->>2)::float8 <= p.now) AS xn,
      jsonb_object_agg(k, v) FILTER (WHERE (v->>2)::float8 > p.now) AS live
    FROM jsonb_each(COALESCE(l.d->'res', '{{}}'::jsonb)) AS r(k, v)) e ON true),
refusal AS (
  SELECT * FROM (
    SELECT ord, 1 AS u, 'tokens' AS unit, mt AS lim, ut + rt AS used, ut AS settled
    FROM bud WHERE mt IS NOT NULL AND ut + rt >= mt
    UNION ALL
    SELECT ord, 2, 'nanos', mn, un + rn, un FROM bud WHERE mn IS NOT NULL AND un + rn >= mn
  ) r ORDER BY ord, u LIMIT 1)
"""

# The limiter (rules.acquire): its clocks, tenants not seen within the window forgotten (with an
# rpm), the caller's tenant, live leases, then the wait and both possible new documents.
_LIMITER = """
lv AS (
  SELECT l.d, COALESCE((l.d->>'tat')::float8, 0) AS tat,
    COALESCE((l.d->>'ttat')::float8, 0) AS ttat, COALESCE((l.d->>'hold')::float8, 0) AS hold,
    COALESCE(l.d->'ten', '{{}}'::jsonb) AS ten, 60000 / p.rpm AS iv,
    (SELECT count(*) FROM jsonb_object_keys(COALESCE(l.d->'ten', '{{}}'::jsonb))) AS nten,
    (SELECT COALESCE(jsonb_object_agg(k, v), '{{}}'::jsonb)
     FROM jsonb_each(COALESCE(l.d->'lease', '{{}}'::jsonb)) AS x(k, v)
     WHERE (v #>> '{{}}')::float8 > p.now) AS lease
  FROM locked l CROSS JOIN p WHERE l.id = p.key),
lt AS (
  SELECT lv.*, CASE WHEN p.rpm IS NULL THEN lv.ten ELSE (
    SELECT COALESCE(jsonb_object_agg(k, v), '{{}}'::jsonb) FROM jsonb_each(lv.ten) AS x(k, v)
    WHERE (v->>1)::float8 >= p.now - greatest(p.win_min, p.win_n * lv.iv * greatest(lv.nten, 1))
  ) END AS tenr,
  (SELECT count(*) FROM jsonb_object_keys(lv.lease)) AS nlease
  FROM lv CROSS JOIN p),
lm AS (
  SELECT lt.*, COALESCE((lt.tenr->p.tenant->>0)::float8, 0) AS mine,
    (SELECT count(*) FROM jsonb_object_keys(lt.tenr)) + CASE WHEN lt.tenr ? p.tenant THEN 0
      ELSE 1 END AS n
  FROM lt CROSS JOIN p),
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
    CASE WHEN p.conc IS NOT NULL AND lm.nlease >= p.conc THEN p.poll END) AS wait
  FROM lm CROSS JOIN p),
ldocs AS (
  SELECT lw.wait, lw.d || jsonb_build_object('tat', lw.tat, 'ttat', lw.ttat, 'hold', lw.hold,
      'lease', lw.lease, 'ten', CASE WHEN p.rpm IS NULL THEN lw.ten
        ELSE lw.tenr || jsonb_build_object(p.tenant, jsonb_build_array(lw.mine, p.now)) END)
      AS waiting,
    lw.d || jsonb_build_object(
      'tat', CASE WHEN p.rpm IS NULL THEN lw.tat ELSE greatest(lw.tat, p.now) + lw.iv END,
      'ttat', CASE WHEN p.tpm IS NULL THEN lw.ttat
        ELSE greatest(lw.ttat, p.now) + p.tokens * 60000 / p.tpm END,
      'hold', lw.hold,
      'lease', CASE WHEN p.conc IS NULL THEN lw.lease
        ELSE lw.lease || jsonb_build_object(p.rid, p.now + p.ttl) END,
      'ten', CASE WHEN p.rpm IS NULL THEN lw.ten ELSE lw.tenr || jsonb_build_object(p.tenant,
        jsonb_build_array(greatest(lw.mine, p.now) + lw.iv * lw.n, p.now)) END,
      'last', jsonb_build_array(p.rid,
        CASE WHEN p.rpm IS NULL THEN 0 ELSE greatest(lw.tat, p.now) + lw.iv - lw.tat END,
        CASE WHEN p.rpm IS NULL THEN 0 ELSE greatest(lw.mine, p.now) + lw.iv * lw.n - lw.mine END,
        CASE WHEN p.tpm IS NULL THEN 0
          ELSE greatest(lw.ttat, p.now) + p.tokens * 60000 / p.tpm - lw.ttat END)) AS taking
  FROM lw CROSS JOIN p)
"""

# Refused: the budgets with expired reservations taken off; a turn to wait for: the limiter's
# tenants and leases; admitted: the reservation on every budget and the turn.
_DECIDE = """
decision AS (
  SELECT (SELECT count(*) FROM locked) = p.n AS complete, r.ord, r.unit, r.lim, r.used,
    r.settled, w.wait
  FROM p LEFT JOIN refusal r ON true LEFT JOIN ldocs w ON true),
new AS (
  SELECT b.id, CASE WHEN x.ord IS NOT NULL
      THEN b.d || jsonb_build_object('ut', b.ut, 'un', b.un, 'rt', b.rt, 'rn', b.rn, 'res', b.res)
      ELSE b.d || jsonb_build_object('ut', b.ut, 'un', b.un, 'rt', b.rt + p.tokens,
        'rn', b.rn + p.nanos, 'res', b.res || jsonb_build_object(p.rid,
          jsonb_build_array(p.tokens, p.nanos, CAST(p.now AS bigint) + p.ttl))) END AS doc
  FROM bud b CROSS JOIN p CROSS JOIN decision x
  WHERE x.complete AND (x.ord IS NOT NULL OR COALESCE(x.wait, 0) <= 0)
  UNION ALL
  SELECT p.key, CASE WHEN w.wait > 0 THEN w.waiting ELSE w.taking END
  FROM ldocs w CROSS JOIN p CROSS JOIN decision x WHERE x.complete AND x.ord IS NULL),
up AS (UPDATE {t} AS t SET doc = CAST(new.doc AS text) FROM new WHERE t.id = new.id RETURNING 1)
SELECT complete, ord, unit, lim, used, settled, wait, (SELECT count(*) FROM up) FROM decision
"""

#: :func:`.rules.admit` in one statement (``{t}``: the table). Result row: complete (every
#: document exists), the refusing budget's place (1-based, None: none), unit, limit, used and
#: settled, the ms to wait (None or <= 0: admitted), the rows written.
ADMIT = "WITH" + ",".join([_PARAMS, _LOCKED, _BUDGETS, _LIMITER, _DECIDE])

#: :func:`.rules.finish` in one statement: settle each budget (``:bids``) and end the lease on the
#: limiter (``key``), correcting its token clock by ``:delta`` tokens; with ``:unsent``
#: (:func:`.rules.give_back`) undo the admission's turn if it is still the last one taken.
#: Result: complete, written.
FINISH = (
    "WITH"
    + ",".join([_PARAMS, _LOCKED])
    + """,
new AS (
  SELECT l.id, l.d || jsonb_build_object(
      'ut', COALESCE((l.d->>'ut')::bigint, 0) + p.tokens,
      'un', COALESCE((l.d->>'un')::bigint, 0) + p.nanos,
      'rt', COALESCE((l.d->>'rt')::bigint, 0) - COALESCE((l.d->'res'->p.rid->>0)::bigint, 0),
      'rn', COALESCE((l.d->>'rn')::bigint, 0) - COALESCE((l.d->'res'->p.rid->>1)::bigint, 0),
      'res', COALESCE(l.d->'res', '{{}}'::jsonb) - p.rid) AS doc
  FROM locked l CROSS JOIN p WHERE l.id IN :bids
  UNION ALL
  SELECT l.id, CASE WHEN u.undo THEN (l.d || jsonb_build_object(
      'lease', COALESCE(l.d->'lease', '{{}}'::jsonb) - p.rid,
      'tat', COALESCE((l.d->>'tat')::float8, 0) - (l.d->'last'->>1)::float8,
      'ttat', COALESCE((l.d->>'ttat')::float8, 0) - (l.d->'last'->>3)::float8,
      'ten', CASE WHEN l.d->'ten' ? p.tenant THEN jsonb_set(l.d->'ten', ARRAY[p.tenant, '0'],
          to_jsonb((l.d->'ten'->p.tenant->>0)::float8 - (l.d->'last'->>2)::float8))
        ELSE COALESCE(l.d->'ten', '{{}}'::jsonb) END)) - 'last'
     ELSE l.d || jsonb_build_object(
      'lease', COALESCE(l.d->'lease', '{{}}'::jsonb) - p.rid,
      'ttat', CASE WHEN p.tpm IS NOT NULL AND CAST(:delta AS bigint) <> 0
        THEN greatest(COALESCE((l.d->>'ttat')::float8, 0) + CAST(:delta AS bigint) * 60000 / p.tpm,
          p.now)
        ELSE COALESCE((l.d->>'ttat')::float8, 0) END) END
  FROM locked l CROSS JOIN p CROSS JOIN LATERAL (
    SELECT CAST(:unsent AS boolean) AND l.d->'last'->>0 = p.rid AS undo) u
  WHERE l.id = p.key),
up AS (UPDATE {t} AS t SET doc = CAST(new.doc AS text) FROM new WHERE t.id = new.id RETURNING 1)
SELECT (SELECT count(*) FROM locked) = p.n, (SELECT count(*) FROM up) FROM p
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
        "rid": a.rid,
        "tokens": tokens,
        "nanos": nanos,
        "ttl": rules.RESERVATION_TTL_MS,
        "key": key,
        "rpm": r.rpm or None,
        "tpm": r.tpm or None,
        "conc": r.concurrent or None,
        "burst": float(r.burst),
        "tenant": a.tenant,
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
        ids: BindParameter[Any] = bindparam("ids", expanding=True)
        admit_sql, finish_sql = ADMIT.format(t=docs.table), FINISH.format(t=docs.table)
        self._admit = text(admit_sql).bindparams(ids)
        self._finish = text(finish_sql).bindparams(ids, bindparam("bids", expanding=True))
        self._admit_names, self._finish_names = _names(admit_sql), _names(finish_sql)

    async def _run(
        self, op: str, stmt: TextClause, values: dict[str, Any], a: Admission
    ) -> tuple[Any, ...]:
        async def once(conn: AsyncConnection) -> tuple[Any, ...]:
            return tuple((await conn.execute(stmt, values)).one())

        row = await self.docs.store.transaction(op, once, write=True, single=True)
        if not row[0]:  # a budget or limiter never written: create its row, then decide
            await self.docs.create(a.names)
            row = await self.docs.store.transaction(op, once, write=True, single=True)
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

    async def hold_off(self, key: str, wait_ms: float) -> None:
        await self.locked.hold_off(key, wait_ms)

    async def read(self, name: str) -> rules.Doc | None:
        return await self.locked.read(name)
