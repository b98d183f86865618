"""Usage documents on a SQL store: the table ``<prefix>usage_doc``, kept through the SQL store's
public table-set hook (:class:`~agentscope_teams.store.sql.TableSet`), so the store creates and
migrates it with its own tables, under the same lock.

One update is one transaction: the missing rows inserted, the named rows read ``FOR UPDATE`` in id
order (SQLite: the transaction is ``BEGIN IMMEDIATE``), the changed ones written back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import Column, MetaData, String, Table, Text, bindparam, text
from sqlalchemy.dialects import mysql
from sqlalchemy.ext.asyncio import AsyncConnection

from ..store.sql import TABLE_OPTIONS, SqlStore, TableSet, create_table
from .docs import Change, doc_id

T = TypeVar("T")


def _tables(md: MetaData, prefix: str) -> tuple[Table]:
    return (
        Table(
            f"{prefix}usage_doc",
            md,
            Column("id", String(64), primary_key=True),
            Column(
                "doc", Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb"), nullable=False
            ),
            **TABLE_OPTIONS,
        ),
    )


async def _m1_usage_doc(conn: AsyncConnection, tables: Mapping[str, Table]) -> None:
    await create_table(conn, tables["usage_doc"])


#: The budgets' and rate limits' documents (one JSON document per budget or limiter row).
USAGE_TABLES = TableSet(
    name="usage",
    define=_tables,
    migrations=((1, "usage_doc: budgets and rate-limit state", _m1_usage_doc),),
)

_INSERT = {
    "postgresql": "INSERT INTO {t} (id, doc) VALUES (:id, '{{}}') ON CONFLICT (id) DO NOTHING",
    # Not INSERT IGNORE: its "Duplicate entry" warning costs asyncmy a SHOW WARNINGS round trip and
    # a logged line on every call whose rows exist.
    "mysql": "INSERT INTO {t} (id, doc) VALUES (:id, '{{}}') ON DUPLICATE KEY UPDATE id = id",
    "sqlite": "INSERT OR IGNORE INTO {t} (id, doc) VALUES (:id, '{{}}')",
}


class SqlDocs:
    """Documents as rows of ``<prefix>usage_doc`` in a SQL store's database."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.table = store.tables(USAGE_TABLES)["usage_doc"].name
        self.dialect = dialect = store.dialect
        lock = "" if dialect == "sqlite" else " FOR UPDATE"
        self._select = text(
            f"SELECT id, doc FROM {self.table} WHERE id IN :ids ORDER BY id{lock}"
        ).bindparams(bindparam("ids", expanding=True))
        self._insert = text(_INSERT[dialect].format(t=self.table))
        self._write = text(f"UPDATE {self.table} SET doc = :doc WHERE id = :id")

    async def update(self, op: str, names: Sequence[str], fn: Change[T]) -> T:
        ids = {doc_id(n): n for n in names}

        async def run(conn: AsyncConnection) -> T:
            await conn.execute(self._insert, [{"id": i} for i in sorted(ids)])
            rows = (await conn.execute(self._select, {"ids": sorted(ids)})).all()
            found: dict[str, Any] = {ids[r[0]]: json.loads(r[1]) or None for r in rows}
            new, result = fn({n: found.get(n) for n in names})
            if new:
                params = [{"id": doc_id(n), "doc": json.dumps(d)} for n, d in new.items()]
                await conn.execute(self._write, params)
            return result

        return await self.store.transaction(op, run, write=True)

    async def create(self, names: Sequence[str]) -> None:
        """Insert the rows of ``names`` that do not exist yet (as empty documents)."""

        async def run(conn: AsyncConnection) -> None:
            await conn.execute(
                self._insert, [{"id": i} for i in sorted({doc_id(n) for n in names})]
            )

        await self.store.transaction("create usage documents", run, write=True)
