"""Batched reads of :class:`~agentscope_teams.store.sql.SqlStore`: ``get_many``.

One ``SELECT kv LEFT JOIN kv_part ... WHERE khash IN (...)`` per chunk of :data:`CHUNK` keys (a bound
far below every dialect's parameter limit), each a single snapshot like ``get``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from ..base import Entry, Key, validate_key
from .database import Retry
from .schema import Tables
from .writes import ref

#: Keys per ``SELECT ... IN``.
CHUNK = 500


def hashes(keys: Sequence[Key]) -> list[bytes]:
    """The primary keys (SHA-256 of the encoding) of ``keys``, validated, in order."""
    return [ref(validate_key(k)).h for k in keys]


def chunks(hs: list[bytes]) -> list[list[bytes]]:
    """The distinct hashes in chunks of at most :data:`CHUNK`."""
    distinct = list(dict.fromkeys(hs))
    return [distinct[i : i + CHUNK] for i in range(0, len(distinct), CHUNK)]


def many_statement(t: Tables, live: ColumnElement[bool], hs: list[bytes]) -> Select[Any]:
    kv, part = t.kv, t.kv_part
    joined = kv.outerjoin(part, and_(part.c.khash == kv.c.khash, kv.c.nparts > 0))
    return (
        select(kv.c.khash, kv.c.version, kv.c.value, kv.c.nparts, part.c.data)
        .select_from(joined)
        .where(kv.c.khash.in_(hs), live)
        .order_by(kv.c.khash, part.c.n)
    )


async def read_chunk(
    conn: AsyncConnection, t: Tables, live: ColumnElement[bool], hs: list[bytes]
) -> dict[bytes, Entry]:
    """The live entries among ``hs`` by hash, chunked values joined (``Retry`` if torn)."""
    rows: dict[bytes, list[Any]] = {}
    for row in (await conn.execute(many_statement(t, live, hs))).all():
        rows.setdefault(bytes(row[0]), []).append(row)
    return {h: entry_of(found, at=1) for h, found in rows.items()}


def entry_of(rows: Sequence[Any], *, at: int = 0) -> Entry:
    """The entry of one key's result rows, whose columns from ``at`` on are (version, head value,
    number of parts, part): the head value, or the parts joined (``Retry`` when a concurrent write
    left them torn)."""
    version, value, nparts = rows[0][at], rows[0][at + 1], rows[0][at + 2]
    if nparts:
        parts = [r[at + 3] for r in rows]
        if len(parts) != nparts or any(p is None for p in parts):
            raise Retry
        value = b"".join(parts)
    return Entry(bytes(value), int(version))
