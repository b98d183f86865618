"""Usage documents on MariaDB/MySQL, sent on the store's asyncmy connection.

The tables, the statements' shapes, the rows a step reads and what it writes are
:mod:`.sql_docs`'s; only the sending differs (as the board's :mod:`..teams.queues.sql_mysql`
does): parameters escaped by the connection (:func:`~agentscope_teams.store.sql.rendered`), no
SQLAlchemy ``Connection`` on the path, and the writes sent with the ``COMMIT`` in one packet. A
step (an ``ADMIT``, a ``FINISH``) is then three round trips: the locked read of the heads (which
begins the transaction), the read of the rows it wants, and the writes with the commit; two when
it wants no row. Through SQLAlchemy it was five (each write, then the commit, apart).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, TypeVar

from ..store.sql import mysql_rows, pyformat, rendered
from .docs import Change, doc_id
from .rows import Entry, join
from .rules import Doc, Wanted
from .sql_docs import (
    _DROP_BATCH,
    Row,
    SqlDocs,
    by_doc,
    changes,
    numbered,
    wanted_probes,
)

T = TypeVar("T")
_ENTRY_COLUMNS = ("doc_id", "kind", "name", "a", "b", "exp")


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

    async def update(
        self, op: str, names: Sequence[str], fn: Change[T], wanted: Wanted | None = None
    ) -> T:
        ids = {doc_id(n): n for n in names}

        async def run(conn: Any) -> T:
            heads = await self._locked(conn, sorted(ids))
            by_name = {ids[i]: h for i, h in heads.items()}
            loaded = await self._read(conn, by_name, wanted)
            found = {n: join(by_name[n], loaded.get(doc_id(n), [])) for n in names}
            new, result = fn(found)
            writes = self._writes(conn, *changes(by_name, loaded, new)) if new else []
            await mysql_rows(conn, ";".join([*writes, "COMMIT"]))
            return result

        return await self.store.with_driver(op, run)

    async def _locked(self, conn: Any, ids: list[str]) -> dict[str, Doc]:
        """The heads of ``ids``, locked (the missing ones inserted first, as ``{}``)."""
        params = {f"i{n}": i for n, i in enumerate(ids)}
        marks = _marks("i", len(ids))
        select = f"SELECT id, doc FROM {self.table} WHERE id IN ({marks}) ORDER BY id FOR UPDATE"
        rows = await mysql_rows(conn, rendered(conn, _shape(select), params))
        if len(rows) < len(ids):
            values = ", ".join(f"(:i{n}, '{{}}')" for n in range(len(ids)))
            insert = f"INSERT INTO {self.table} (id, doc) VALUES {values}"
            insert += " ON DUPLICATE KEY UPDATE id = id"
            await mysql_rows(conn, rendered(conn, _shape(insert), params))
            rows = await mysql_rows(conn, rendered(conn, _shape(select), params))
        return {r[0]: json.loads(r[1]) for r in rows}

    async def _read(
        self, conn: Any, heads: dict[str, Doc], wanted: Wanted | None
    ) -> dict[str, list[Entry]]:
        """The rows of the documents ``heads`` that ``wanted`` asks for (None: every row)."""
        if wanted is None:
            ids = [doc_id(n) for n in heads]
            columns = ", ".join(_ENTRY_COLUMNS)
            sql = f"SELECT {columns} FROM {self.entries} WHERE doc_id IN ({_marks('i', len(ids))})"
            params: dict[str, Any] = {f"i{n}": i for n, i in enumerate(ids)}
        else:
            probes = wanted_probes(heads, wanted)
            if not probes:
                return {}
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
        for at in range(0, len(drop), _DROP_BATCH):
            batch = drop[at : at + _DROP_BATCH]
            out.append(rendered(conn, _shape(self._drop(len(batch)).text), numbered(batch)))
        if put_rows:
            keep = "a = VALUES(a), b = VALUES(b), exp = VALUES(exp)"
            rows = _values(self.entries, _ENTRY_COLUMNS, len(put_rows), keep)
            out.append(rendered(conn, rows, numbered(put_rows)))
        return out
