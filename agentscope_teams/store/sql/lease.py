"""``create_then_get`` on PostgreSQL in one round trip: a PL/pgSQL function of the schema.

A lease is taken, then the record it guards is read (:func:`~agentscope_teams.store.base.
create_then_get`). One plain statement cannot do both: all of it reads with the snapshot taken at
its start, which may predate the commit of the previous holder's last save (that save and the
lease's release are one transaction; the lease insert waits for it and then succeeds, but the
statement's snapshot stays the older one). A ``VOLATILE`` function in READ COMMITTED takes a new
snapshot for each statement inside it, so its read, run after the insert, sees every transaction
committed before the lease was taken: as the two statements sent one after the other do.

``<prefix>create_then_get(khash, khead, ekey, value, ttl, read_khash)`` writes the lease row as
``put(expected_version=0)`` does (``INSERT ... ON CONFLICT DO UPDATE ... WHERE expired``), then
returns rows ``(written, lease_version, version, value, nparts, part)``: on success the read
key's rows as ``get`` reads them (its chunks in order; one row of NULLs when absent); when the
lease is held one row ``(false, live version)`` (0: it expired meanwhile, the caller tries again);
outside READ COMMITTED (a database whose default isolation is stricter: one snapshot for the
whole call) one row ``(NULL)`` and nothing written, and the store sends the two statements.

Created by the store's migration 3 (:mod:`.schema`); the function reads the store's tables by
name, resolved like the store's own statements.
"""

from __future__ import annotations

from typing import Any

from ..base import Entry
from .database import Retry
from .reads import entry_of
from .schema import Tables


def function_name(t: Tables) -> str:
    return f"{t.schema.name.removesuffix('schema')}create_then_get"


def create_function(t: Tables) -> str:
    """The ``CREATE OR REPLACE FUNCTION`` statement for the tables ``t``."""
    kv, part, now = t.kv.name, t.kv_part.name, "now_s"
    live = f"(kv.expires_at IS NULL OR kv.expires_at > {now})"
    return f"""
CREATE OR REPLACE FUNCTION {function_name(t)}(
    lease_h bytea, lease_head bytea, lease_ekey bytea, lease_value bytea,
    ttl double precision, read_h bytea)
RETURNS TABLE(o_written boolean, o_lease bigint, o_version bigint, o_value bytea,
              o_nparts integer, o_data bytea)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    {now} double precision := CAST(EXTRACT(EPOCH FROM statement_timestamp()) AS double precision);
    written bigint;
    held bigint;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RETURN QUERY SELECT CAST(NULL AS boolean), CAST(NULL AS bigint), CAST(NULL AS bigint),
            CAST(NULL AS bytea), CAST(NULL AS integer), CAST(NULL AS bytea);
        RETURN;
    END IF;
    INSERT INTO {kv} AS kv (khash, khead, ekey, value, nparts, version, expires_at)
    VALUES (lease_h, lease_head, lease_ekey, lease_value, 0, 1, {now} + ttl)
    ON CONFLICT (khash) DO UPDATE
        SET value = EXCLUDED.value, nparts = EXCLUDED.nparts,
            expires_at = EXCLUDED.expires_at, version = 1
        WHERE kv.expires_at IS NOT NULL AND kv.expires_at <= {now}
    RETURNING kv.version INTO written;
    IF written IS NULL THEN
        SELECT kv.version INTO held FROM {kv} AS kv WHERE kv.khash = lease_h AND {live};
        RETURN QUERY SELECT false, COALESCE(held, 0), CAST(NULL AS bigint),
            CAST(NULL AS bytea), CAST(NULL AS integer), CAST(NULL AS bytea);
        RETURN;
    END IF;
    -- a new snapshot: every transaction committed before the lease was written is seen
    RETURN QUERY SELECT true, written, kv.version, kv.value, kv.nparts, part.data
        FROM {kv} AS kv
        LEFT JOIN {part} AS part ON part.khash = kv.khash AND kv.nparts > 0
        WHERE kv.khash = read_h AND {live}
        ORDER BY part.n;
    IF NOT FOUND THEN
        RETURN QUERY SELECT true, written, CAST(NULL AS bigint), CAST(NULL AS bytea),
            CAST(NULL AS integer), CAST(NULL AS bytea);
    END IF;
END
$fn$
"""


def call_statement(t: Tables) -> str:
    """The call, with numbered parameters (asyncpg)."""
    return f"SELECT * FROM {function_name(t)}($1, $2, $3, $4, $5, $6)"


def outcome(rows: list[Any]) -> tuple[bool, int, Entry | None] | None:
    """``(written, version, entry)`` of the function's rows: the lease's new version and the read
    entry, or (False, the live version found, None); None outside READ COMMITTED. ``Retry``
    when the lease expired between the insert and the look at it, or the chunks are torn."""
    first = rows[0]
    if first[0] is None:
        return None
    if not first[0]:
        if not first[1]:
            raise Retry
        return False, int(first[1]), None
    found = None if first[2] is None else entry_of(rows, at=2)
    return True, int(first[1]), found
