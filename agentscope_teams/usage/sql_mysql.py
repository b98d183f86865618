"""Usage documents on MariaDB/MySQL, sent on the store's asyncmy connection.

The tables, the statements' shapes, the rows a step reads and what it writes are
:mod:`.sql_docs`'s; only the sending differs (as the board's :mod:`..teams.queues.sql_mysql`
does): parameters escaped by the connection (:func:`~agentscope_teams.store.sql.rendered`), no
SQLAlchemy ``Connection`` on the path, and the writes sent with the ``COMMIT`` in one packet.

The rows a step reads depend on its documents' heads (an ``ADMIT`` under a requests limit reads
the tenants unseen for a window that grows with their count), which are read locked first. So the
rows are guessed from the heads this process left after its last step on those documents, and
read in the same packet as the locked heads; when the heads turn out to ask for other rows, those
are read next. A step (an ``ADMIT``, a ``FINISH``) is then two round trips: the locked heads with
the guessed rows (this begins the transaction), and the writes with the commit; three when the
guess was wrong (another process changed the count of tenants meanwhile, or this process had not
seen the documents). Through SQLAlchemy it was five (each write, then the commit, apart).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, TypeVar

from ..store.sql import SqlStore, mysql_results, mysql_rows, pyformat, rendered
from .docs import Change, doc_id
from .rows import Entry, join, split
from .rules import Doc, Wanted
from .sql_docs import (
    DROP_BATCH,
    Probe,
    Row,
    SqlDocs,
    by_doc,
    changes,
    numbered,
    wanted_probes,
)

T = TypeVar("T")
_ENTRY_COLUMNS = ("doc_id", "kind", "name", "a", "b", "exp")
#: Documents whose last heads a :class:`MysqlDocs` keeps to guess a step's rows with.
REMEMBERED = 1024


@lru_cache(maxsize=256)
def _shape(template: str) -> str:
    """``template`` as :func:`rendered` takes it, built once per shape."""
    return pyformat(template)


@lru_cache(maxsize=256)
def _marks(name: str, n: int) -> str:
    """``:name0, :name1, …`` for ``n`` values."""
    return ", ".join(f":{name}{i}" for i in range(n))


@lru_cache(maxsize=256)
def _values(table: str, columns: tuple[str, ...], n: int, on_duplicate: str) -> str:
    """An ``INSERT`` of ``n`` rows of ``columns`` (parameters ``:<column><i>``), then
    ``ON DUPLICATE KEY UPDATE on_duplicate``, in :func:`rendered`'s form."""
    row = "(" + ", ".join(":" + c + "{i}" for c in columns) + ")"
    rows = ", ".join(row.format(i=i) for i in range(n))
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES {rows}"
    return pyformat(f"{sql} ON DUPLICATE KEY UPDATE {on_duplicate}")


class MysqlDocs(SqlDocs):
    """:class:`SqlDocs` whose steps run on the asyncmy connection (see the module docs)."""

    def __init__(self, store: SqlStore) -> None:
        super().__init__(store)
        #: The heads each document had after this process's last step on it, to guess the rows
        #: the next step wants (:meth:`update`); at most :data:`REMEMBERED` (oldest dropped).
        self._last: dict[str, Doc | None] = {}

    async def update(
        self, op: str, names: Sequence[str], fn: Change[T], wanted: Wanted | None = None
    ) -> T:
        ids = {doc_id(n): n for n in names}

        async def run(conn: Any) -> T:
            order = [ids[i] for i in sorted(ids)]  # the heads' order, as they are read
            guess = None if wanted is None else wanted_probes(self._guessed(order), wanted)
            heads, rows = await self._locked(conn, sorted(ids), guess)
            by_name = {ids[i]: h for i, h in heads.items()}
            probes = None if wanted is None else wanted_probes(by_name, wanted)
            if rows is None or probes != guess:  # the heads ask for other rows than guessed
                rows = await self._read(conn, by_name, probes)
            found = {n: join(by_name[n], rows.get(doc_id(n), [])) for n in names}
            new, result = fn(found)
            writes = self._writes(conn, *changes(by_name, rows, new)) if new else []
            await mysql_rows(conn, ";".join([*writes, "COMMIT"]))
            for name in names:
                self._remember(name, split(new[name])[0] if name in new else by_name[name])
            return result

        return await self.store.with_driver(op, run)

    def _guessed(self, names: Sequence[str]) -> dict[str, Doc]:
        """The heads of ``names`` as this process last left them (``{}`` when unknown)."""
        return {n: self._last.get(n) or {} for n in names}

    def _remember(self, name: str, head: Doc) -> None:
        last = self._last
        last.pop(name, None)
        last[name] = head
        if len(last) > REMEMBERED:
            del last[next(iter(last))]

    async def _locked(
        self, conn: Any, ids: list[str], guess: list[Probe] | None
    ) -> tuple[dict[str, Doc], dict[str, list[Entry]] | None]:
        """The heads of ``ids``, locked (the missing ones inserted first, as ``{}``), and the
        rows the probes ``guess`` read in the same packet (None: nothing read)."""
        params = {f"i{n}": i for n, i in enumerate(ids)}
        marks = _marks("i", len(ids))
        select = f"SELECT id, doc FROM {self.table} WHERE id IN ({marks}) ORDER BY id FOR UPDATE"
        packet = [rendered(conn, _shape(select), params)]
        if guess:
            stmt, probed = self._probe(guess)
            packet.append(rendered(conn, _shape(stmt.text), probed))
        found = await mysql_results(conn, ";".join(packet))
        heads, rows = found[0], (by_doc(found[1]) if guess else None)
        if len(heads) < len(ids):
            empty = ", ".join(f"(:i{n}, '{{}}')" for n in range(len(ids)))
            insert = f"INSERT INTO {self.table} (id, doc) VALUES {empty}"
            insert += " ON DUPLICATE KEY UPDATE id = id"
            await mysql_rows(conn, rendered(conn, _shape(insert), params))
            heads = await mysql_rows(conn, rendered(conn, _shape(select), params))
            rows = None  # read again under the new heads' locks
        return {r[0]: json.loads(r[1]) for r in heads}, rows

    async def _read(
        self, conn: Any, heads: dict[str, Doc], probes: list[Probe] | None
    ) -> dict[str, list[Entry]]:
        """The rows of the documents ``heads`` that ``probes`` ask for (None: every row)."""
        if probes is None:
            ids = [doc_id(n) for n in heads]
            columns = ", ".join(_ENTRY_COLUMNS)
            sql = f"SELECT {columns} FROM {self.entries} WHERE doc_id IN ({_marks('i', len(ids))})"
            params: dict[str, Any] = {f"i{n}": i for n, i in enumerate(ids)}
        elif not probes:
            return {}
        else:
            stmt, params = self._probe(probes)
            sql = stmt.text
        return by_doc(await mysql_rows(conn, rendered(conn, _shape(sql), params)))

    def _writes(
        self, conn: Any, put_heads: list[Row], drop: list[Row], put_rows: list[Row]
    ) -> list[str]:
        """The statements writing :func:`~.sql_docs.changes`' three lists, in
        :meth:`SqlDocs._write`'s order: heads, deleted rows, written rows."""
        out = []
        if put_heads:
            heads = _values(self.table, ("id", "doc"), len(put_heads), "doc = VALUES(doc)")
            out.append(rendered(conn, heads, numbered(put_heads)))
        for at in range(0, len(drop), DROP_BATCH):
            batch = drop[at : at + DROP_BATCH]
            out.append(rendered(conn, _shape(self._drop(len(batch)).text), numbered(batch)))
        if put_rows:
            keep = "a = VALUES(a), b = VALUES(b), exp = VALUES(exp)"
            rows = _values(self.entries, _ENTRY_COLUMNS, len(put_rows), keep)
            out.append(rendered(conn, rows, numbered(put_rows)))
        return out
