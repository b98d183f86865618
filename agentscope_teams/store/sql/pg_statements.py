"""Store operations on PostgreSQL sent as one statement on the asyncpg connection (:mod:`.driver`).

Through SQLAlchemy a statement costs ≈ 0.5 ms of client CPU before it is sent; on the asyncpg
connection it is prepared once per connection and costs tens of µs. Two operations of a team
member's wake-up run this way:

* ``get_many_and_read`` (:func:`round_statement`): the live entries of some keys (chunks joined,
  as ``get_many`` reads them) and a page of each of some streams (as ``read`` reads it), in one
  ``SELECT ... UNION ALL SELECT``: one statement, so one snapshot, taken when it starts (every
  write committed before it was sent is seen). The keys and the pages are array parameters, so
  the statement's text is the same whatever their number.
* ``put(expected_version=n)`` of an inline value with no fence (:func:`update_statement`): the
  ``UPDATE ... WHERE khash = $1 AND version = n AND live RETURNING version`` that
  :meth:`~.writes.Statements.write_row` sends; when it matches no row, the live version is read
  by a second statement (:func:`version_statement`), as the SQLAlchemy path does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..base import Entry
from .database import Retry
from .dialect import NOW_SQL
from .reads import entry_of
from .schema import Tables

_NOW = NOW_SQL["postgresql"]
_LIVE = f"(k.expires_at IS NULL OR k.expires_at > {_NOW})"


def round_statement(t: Tables) -> str:
    """Rows ``(page, khash, seq, version, value, nparts, part)``: an entry's rows have ``page``
    NULL (one per chunk, in order), a stream page's rows the page's index (0, 1, ...) in the
    arrays ``$2`` (stream ids), ``$3`` (after), ``$4`` (limit); ``$1`` is the keys' hashes."""
    kv, part, st, st_part = t.kv.name, t.kv_part.name, t.stream.name, t.stream_part.name
    return f"""
SELECT CAST(NULL AS integer) AS page, k.khash, CAST(NULL AS bigint) AS seq, k.version, k.value,
       k.nparts, p.data, p.n
FROM {kv} k LEFT JOIN {part} p ON p.khash = k.khash AND k.nparts > 0
WHERE k.khash = ANY($1::bytea[]) AND {_LIVE}
UNION ALL
SELECT CAST(q.i AS integer) - 1, NULL, s.seq, NULL, s.value, s.nparts, sp.data, sp.n
FROM unnest($2::bytea[], $3::bigint[], $4::integer[]) WITH ORDINALITY AS q(sid, after, lim, i)
CROSS JOIN LATERAL (
    SELECT e.seq, e.value, e.nparts FROM {st} e
    WHERE e.sid = q.sid AND e.seq > q.after ORDER BY e.seq LIMIT q.lim
) s
LEFT JOIN {st_part} sp ON sp.sid = q.sid AND sp.seq = s.seq AND s.nparts > 0
ORDER BY 1 NULLS FIRST, 2, 3, 8
"""


def round_of(
    rows: Sequence[Any], hs: Sequence[bytes], npages: int
) -> tuple[list[Entry | None], list[list[tuple[int, bytes]]]]:
    """The entries of ``hs`` (None where none is live) and the ``npages`` pages from the rows of
    :func:`round_statement`. ``Retry`` when an entry's chunks are torn; a page stops before an
    entry whose chunks are gone (its stream was deleted meanwhile), as ``read`` does."""
    entries: dict[bytes, list[Any]] = {}
    pages: list[dict[int, list[Any]]] = [{} for _ in range(npages)]
    for row in rows:
        if row[0] is None:
            entries.setdefault(bytes(row[1]), []).append((row[3], row[4], row[5], row[6]))
        else:
            pages[row[0]].setdefault(int(row[2]), []).append(row)
    found = {h: entry_of(got) for h, got in entries.items()}
    return [found.get(h) for h in hs], [_page(p) for p in pages]


def _page(entries: dict[int, list[Any]]) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    for seq, rows in entries.items():
        value, nparts = rows[0][4], rows[0][5]
        if nparts:
            parts = [r[6] for r in rows if r[6] is not None]
            if len(parts) != nparts:
                break  # the stream was deleted while the entry was read
            value = b"".join(parts)
        out.append((seq, bytes(value)))
    return out


def update_statement(t: Tables) -> str:
    """The versioned write of an inline value: ``$1`` key hash, ``$2`` value, ``$3`` expected
    version, ``$4`` ttl in seconds (NULL: no expiry); returns the new version, or no row."""
    return (
        f"UPDATE {t.kv.name} AS k SET value = $2, nparts = 0, version = k.version + 1, "
        f"expires_at = {_NOW} + $4::double precision "
        f"WHERE k.khash = $1 AND k.version = $3 AND {_LIVE} RETURNING k.version"
    )


def version_statement(t: Tables) -> str:
    """The live version of ``$1`` (no row: none)."""
    return f"SELECT k.version FROM {t.kv.name} AS k WHERE k.khash = $1 AND {_LIVE}"


@dataclass(frozen=True)
class Texts:
    """The statements' texts for one set of tables (built once per store)."""

    round: str
    update: str
    version: str

    @classmethod
    def of(cls, t: Tables) -> Texts:
        return cls(round_statement(t), update_statement(t), version_statement(t))


async def update(
    conn: Any, texts: Texts, h: bytes, value: bytes, expected: int, ttl: float | None
) -> tuple[bool, int]:
    """Run the versioned write on the asyncpg connection ``conn``: ``(True, new version)``, or,
    when it matched no row, ``(False, the live version found)`` (0: none). ``Retry`` when the
    version found is the one expected (the row was rewritten between the two statements)."""
    written = await conn.fetchval(texts.update, h, value, expected, ttl)
    if written is not None:
        return True, int(written)
    found = int(await conn.fetchval(texts.version, h) or 0)
    if found == expected:
        raise Retry
    return False, found
