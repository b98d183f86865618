"""Usage documents on a SQL store: the tables ``<prefix>usage_doc`` (one JSON head per budget or
limiter) and ``<prefix>usage_entry`` (its reservations, tenants and leases, one row each:
:mod:`.rows`), kept through the SQL store's public table-set hook
(:class:`~agentscope_teams.store.sql.TableSet`), so the store creates and migrates them with its
own tables, under the same lock.

One update is one transaction whose work does not grow with the calls in flight: the heads read
``FOR UPDATE`` in id order (SQLite: the transaction is ``BEGIN IMMEDIATE``; a missing head is
inserted first), then only the rows the step needs (:data:`~.rules.Wanted`: the call's own, and
what has ended, found through the index on ``(doc_id, kind, exp)``), the rules run on the
documents those make, and the heads and rows that changed are written back.

Migration 2 moved the maps of documents written by releases before it into rows. A process of
such a release refuses a migrated database: the store's setup raises
:class:`~agentscope_teams.errors.SchemaVersionError` (``usage_schema`` is at version 2, newer
than it understands) at its first governed call, and its store stays unusable until upgraded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import (
    BindParameter,
    Column,
    Double,
    Index,
    MetaData,
    String,
    Table,
    Text,
    bindparam,
    text,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.ext.asyncio import AsyncConnection

from ..store.sql import TABLE_OPTIONS, SqlStore, TableSet, create_table
from .docs import Change, doc_id
from .rows import MAPS, Entry, join, split
from .rules import Doc, Wanted

T = TypeVar("T")


def _tables(md: MetaData, prefix: str) -> tuple[Table, Table]:
    doc = Table(
        f"{prefix}usage_doc",
        md,
        Column("id", String(64), primary_key=True),
        Column("doc", Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb"), nullable=False),
        **TABLE_OPTIONS,
    )
    entry = Table(
        f"{prefix}usage_entry",
        md,
        # the key leads with the name: a row looked up by name is found through it, never
        # through the expiry index (which a planner without statistics could take for it)
        Column("name", String(255), primary_key=True),
        Column("doc_id", String(64), primary_key=True),
        Column("kind", String(1), primary_key=True),
        Column("a", Double, nullable=False),
        Column("b", Double, nullable=False),
        Column("exp", Double, nullable=False),
        Index(f"{prefix}usage_entry_exp", "doc_id", "kind", "exp"),
        **TABLE_OPTIONS,
    )
    return doc, entry


async def _m1_usage_doc(conn: AsyncConnection, tables: Mapping[str, Table]) -> None:
    await create_table(conn, tables["usage_doc"])


async def _m2_usage_entry(conn: AsyncConnection, tables: Mapping[str, Table]) -> None:
    """Create ``usage_entry`` and move every document's embedded maps into its rows."""
    await create_table(conn, tables["usage_entry"])
    docs, entries = tables["usage_doc"].name, tables["usage_entry"].name
    found = (await conn.execute(text(f"SELECT id, doc FROM {docs}"))).all()
    heads, rows = [], []
    for did, raw in found:
        doc = json.loads(raw)
        if not isinstance(doc, dict) or not doc.keys() & {"res", "ten", "lease"}:
            continue
        head, moved = split(doc)
        heads.append({"id": did, "doc": json.dumps(head)})
        rows += [{"doc_id": did, **e._asdict()} for e in moved]
    if heads:
        await conn.execute(text(f"UPDATE {docs} SET doc = :doc WHERE id = :id"), heads)
    if rows:
        insert = f"INSERT INTO {entries} (doc_id, kind, name, a, b, exp) "
        await conn.execute(text(insert + "VALUES (:doc_id, :kind, :name, :a, :b, :exp)"), rows)


#: The budgets' and rate limits' documents (a JSON head per budget or limiter, a row per entry).
USAGE_TABLES = TableSet(
    name="usage",
    define=_tables,
    migrations=(
        (1, "usage_doc: budgets and rate-limit state", _m1_usage_doc),
        (2, "usage_entry: reservations, tenants and leases as rows", _m2_usage_entry),
    ),
)

_INSERT = {
    "postgresql": "INSERT INTO {t} (id, doc) VALUES (:id, '{{}}') ON CONFLICT (id) DO NOTHING",
    # Not INSERT IGNORE: its "Duplicate entry" warning costs asyncmy a SHOW WARNINGS round trip and
    # a logged line on every call whose rows exist.
    "mysql": "INSERT INTO {t} (id, doc) VALUES (:id, '{{}}') ON DUPLICATE KEY UPDATE id = id",
    "sqlite": "INSERT OR IGNORE INTO {t} (id, doc) VALUES (:id, '{{}}')",
}
_UPSERT = {
    "postgresql": " ON CONFLICT ({key}) DO UPDATE SET {sets}",
    "mysql": " ON DUPLICATE KEY UPDATE {sets}",
    "sqlite": " ON CONFLICT ({key}) DO UPDATE SET {sets}",
}


def _upsert(dialect: str, table: str, cols: Sequence[str], key: Sequence[str]) -> str:
    new = "VALUES({c})" if dialect == "mysql" else "excluded.{c}"
    sets = ", ".join(f"{c} = " + new.format(c=c) for c in cols if c not in key)
    values = ", ".join(f":{c}" for c in cols)
    head = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({values})"
    return head + _UPSERT[dialect].format(key=", ".join(key), sets=sets)


#: Rows deleted per statement (3 parameters each, within SQLite's limit of 999 of old).
DROP_BATCH = 300
_ROW = "SELECT doc_id, kind, name, a, b, exp FROM {e} WHERE doc_id = :d{i} AND kind = :k{i}"


Row = dict[str, Any]


def changes(
    heads: dict[str, Doc], loaded: dict[str, list[Entry]], new: dict[str, Doc]
) -> tuple[list[Row], list[Row], list[Row]]:
    """The heads and rows of ``new`` that differ from those read (``heads``, ``loaded``): heads
    to write (``id``, ``doc``), rows to delete (``d``, ``k``, ``n``: read but no longer in their
    document) and rows to write (the entry's columns)."""
    put_heads, put_rows, drop = [], [], []
    for name, doc in new.items():
        did = doc_id(name)
        head, rows = split(doc)
        if head != heads.get(name):
            put_heads.append({"id": did, "doc": json.dumps(head)})
        before = {(e.kind, e.name): e for e in loaded.get(did, [])}
        after = {(e.kind, e.name): e for e in rows}
        put_rows += [{"doc_id": did, **e._asdict()} for k, e in after.items() if before.get(k) != e]
        drop += [{"d": did, "k": k, "n": n} for k, n in sorted(before.keys() - after.keys())]
    return put_heads, drop, put_rows


Probe = tuple[str, str, str, float | str]


def wanted_probes(heads: dict[str, Doc], wanted: Wanted) -> list[Probe]:
    """What ``wanted`` asks of each document in ``heads`` (by name), as ``(doc id, kind, test,
    value)`` probes of its rows (:meth:`SqlDocs._probe`)."""
    return [(doc_id(n), MAPS[m], t, v) for n in heads for m, t, v in wanted(n, heads[n] or None)]


def by_doc(found: Sequence[Sequence[Any]]) -> dict[str, list[Entry]]:
    """Rows read (``doc_id``, then an entry's columns) as entries by document id."""
    out: dict[str, list[Entry]] = {}
    for r in found:
        out.setdefault(r[0], []).append(Entry(*r[1:]))
    return out


def numbered(rows: Sequence[Row]) -> Row:
    """The parameters of ``rows`` as one statement's, each name suffixed by its row's index."""
    return {f"{k}{i}": v for i, row in enumerate(rows) for k, v in row.items()}


class SqlDocs:
    """Documents as a head in ``<prefix>usage_doc`` and rows in ``<prefix>usage_entry``."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        tables = store.tables(USAGE_TABLES)
        self.table, self.entries = tables["usage_doc"].name, tables["usage_entry"].name
        self.dialect = dialect = store.dialect
        lock = "" if dialect == "sqlite" else " FOR UPDATE"
        ids: BindParameter[Any] = bindparam("ids", expanding=True)
        self._select = text(
            f"SELECT id, doc FROM {self.table} WHERE id IN :ids ORDER BY id{lock}"
        ).bindparams(ids)
        self._all_rows = text(
            f"SELECT doc_id, kind, name, a, b, exp FROM {self.entries} WHERE doc_id IN :ids"
        ).bindparams(ids)
        self._insert = text(_INSERT[dialect].format(t=self.table))
        self._heads = text(_upsert(dialect, self.table, ("id", "doc"), ("id",)))
        cols = ("doc_id", "kind", "name", "a", "b", "exp")
        self._put_rows = text(_upsert(dialect, self.entries, cols, cols[:3]))
        self._probes: dict[tuple[str, ...], Any] = {}
        self._drops: dict[int, Any] = {}

    async def update(
        self, op: str, names: Sequence[str], fn: Change[T], wanted: Wanted | None = None
    ) -> T:
        """Run ``fn`` on the documents ``names`` made of their heads and the rows ``wanted``
        names (None: every row), and write back what changed, in one transaction."""
        ids = {doc_id(n): n for n in names}

        async def run(conn: AsyncConnection) -> T:
            heads = await self._lock(conn, sorted(ids))
            by_name = {ids[i]: h for i, h in heads.items()}
            loaded = await self._rows(conn, by_name, wanted)
            found = {n: join(by_name[n], loaded.get(doc_id(n), [])) for n in names}
            new, result = fn(found)
            if new:
                await self._write(conn, by_name, loaded, new)
            return result

        return await self.store.transaction(op, run, write=True)

    async def _lock(self, conn: AsyncConnection, ids: list[str]) -> dict[str, Doc]:
        """The heads of ``ids``, locked (the missing ones inserted first, as ``{}``)."""
        rows = (await conn.execute(self._select, {"ids": ids})).all()
        if len(rows) < len(ids):
            await conn.execute(self._insert, [{"id": i} for i in ids])
            rows = (await conn.execute(self._select, {"ids": ids})).all()
        return {r[0]: json.loads(r[1]) for r in rows}

    async def _rows(
        self, conn: AsyncConnection, heads: dict[str, Doc], wanted: Wanted | None
    ) -> dict[str, list[Entry]]:
        """The rows of the documents ``heads`` that ``wanted`` asks for, by document id."""
        if wanted is None:
            params: dict[str, Any] = {"ids": [doc_id(n) for n in heads]}
            found = (await conn.execute(self._all_rows, params)).all()
        else:
            probes = wanted_probes(heads, wanted)
            if not probes:
                return {}
            stmt, params = self._probe(probes)
            found = (await conn.execute(stmt, params)).all()
        return by_doc(found)

    def _probe(self, probes: list[Probe]) -> tuple[Any, dict[str, Any]]:
        """One statement reading every probe ``(doc id, kind, test, value)``: test ``=`` a row
        by name, ``<=`` / ``<`` the rows whose ``exp`` is at most / below the value."""
        shape = tuple(p[2] for p in probes)
        stmt = self._probes.get(shape)
        if stmt is None:
            tests = {"=": " AND name = :v{i}", "<=": " AND exp <= :v{i}", "<": " AND exp < :v{i}"}
            parts = [
                _ROW.format(e=self.entries, i=i) + tests[t].format(i=i) for i, t in enumerate(shape)
            ]
            stmt = self._probes[shape] = text(" UNION ALL ".join(parts))
        params: dict[str, Any] = {}
        for i, (did, kind, _, value) in enumerate(probes):
            params.update({f"d{i}": did, f"k{i}": kind, f"v{i}": value})
        return stmt, params

    async def _write(
        self,
        conn: AsyncConnection,
        heads: dict[str, Doc],
        loaded: dict[str, list[Entry]],
        new: dict[str, Doc],
    ) -> None:
        """Write what :func:`changes` finds changed."""
        put_heads, drop, put_rows = changes(heads, loaded, new)
        if put_heads:
            await conn.execute(self._heads, put_heads)
        # one statement per DROP_BATCH rows (an executemany of a DELETE sends one per row)
        for at in range(0, len(drop), DROP_BATCH):
            batch = drop[at : at + DROP_BATCH]
            await conn.execute(self._drop(len(batch)), numbered(batch))
        if put_rows:
            await conn.execute(self._put_rows, put_rows)

    def _drop(self, n: int) -> Any:
        """A statement deleting ``n`` rows by their keys (``:d<i>``, ``:k<i>``, ``:n<i>``)."""
        stmt = self._drops.get(n)
        if stmt is None:
            rows = " OR ".join(
                f"(name = :n{i} AND doc_id = :d{i} AND kind = :k{i})" for i in range(n)
            )
            stmt = self._drops[n] = text(f"DELETE FROM {self.entries} WHERE {rows}")
        return stmt

    async def create(self, names: Sequence[str]) -> None:
        """Insert the heads of ``names`` that do not exist yet (as empty documents)."""

        async def run(conn: AsyncConnection) -> None:
            await conn.execute(
                self._insert, [{"id": i} for i in sorted({doc_id(n) for n in names})]
            )

        await self.store.transaction("create usage documents", run, write=True)

    async def write(self, name: str, doc: Doc) -> None:
        """Store ``doc`` (maps embedded) as ``name``'s head and rows, replacing what was there."""

        async def run(conn: AsyncConnection) -> None:
            did = doc_id(name)
            await self._lock(conn, [did])
            await conn.execute(text(f"DELETE FROM {self.entries} WHERE doc_id = :d"), {"d": did})
            await self._write(conn, {}, {}, {name: doc})

        await self.store.transaction("write usage document", run, write=True)
