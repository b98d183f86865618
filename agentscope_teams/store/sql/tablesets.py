"""Tables another package keeps in a :class:`~.store.SqlStore`'s database, with their migrations.

A package (the task board's SQL queue, say) describes its tables once as a :class:`TableSet` and
registers it with :func:`register_table_set`. Every ``SqlStore`` then creates and migrates the
set's tables, named with the store's ``table_prefix``, in :meth:`~.store.SqlStore.setup` (or on
first use when the set is registered after it), under the same database-wide lock as the store's
own migrations. A set's applied migrations are recorded in a table of its own,
``<prefix><name>_schema``, with the columns of the store's ``<prefix>schema``; its migrations are
append-only, like the store's.

The package then reaches its tables through the store's public interface only:
:meth:`~.store.SqlStore.tables` (its tables for this store), :meth:`~.store.SqlStore.transaction`
(one transaction with the store's retries), :attr:`~.store.SqlStore.records` (the table the
store's records live in) and :meth:`~.store.SqlStore.key_hash` (a key's row id there).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import MetaData, Table
from sqlalchemy.ext.asyncio import AsyncConnection

from ...errors import ConfigurationError
from ..encoding import Key
from .database import Database
from .schema import Tables, apply_migrations, schema_table
from .writes import ref

T = TypeVar("T")

#: One migration step: (connection, the set's tables for the store's prefix).
SetMigration = Callable[[AsyncConnection, Mapping[str, Table]], Awaitable[None]]
_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,19}")


@dataclass(frozen=True)
class TableSet:
    """Named tables and their append-only migrations ``(version, description, step)``."""

    name: str
    #: The set's tables for a table prefix, defined on the given ``MetaData`` (names start with
    #: the prefix); each migration step receives them by their ``Table.name`` without the prefix.
    define: Callable[[MetaData, str], Sequence[Table]]
    migrations: tuple[tuple[int, str, SetMigration], ...]

    def __post_init__(self) -> None:
        if not _NAME_RE.fullmatch(self.name):
            raise ConfigurationError(
                f"table set name {self.name!r} must be 1-20 lowercase letters, digits and "
                "underscores, starting with a letter"
            )
        versions = [v for v, _, _ in self.migrations]
        if versions != list(range(1, len(versions) + 1)):
            raise ConfigurationError(
                f"the migrations of table set {self.name!r} must be numbered 1, 2, 3, ... in "
                f"order; got {versions}"
            )


_REGISTERED: dict[str, TableSet] = {}


def register_table_set(table_set: TableSet) -> None:
    """Have every ``SqlStore`` create and migrate ``table_set`` (registering it again is a no-op;
    another set under the same name is an error)."""
    known = _REGISTERED.get(table_set.name)
    if known is not None and known is not table_set:
        raise ConfigurationError(f"another table set is registered as {table_set.name!r}")
    _REGISTERED[table_set.name] = table_set


def registered_table_sets() -> list[TableSet]:
    return list(_REGISTERED.values())


class StoreTableSets:
    """The registered sets of one store: their tables for its prefix, and which are migrated."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._tables: dict[str, dict[str, Table]] = {}
        self._done: set[str] = set()

    def tables(self, table_set: TableSet) -> Mapping[str, Table]:
        """``table_set``'s tables for this prefix, by name without the prefix."""
        found = self._tables.get(table_set.name)
        if found is None:
            defined = table_set.define(MetaData(), self.prefix)
            found = {t.name.removeprefix(self.prefix): t for t in defined}
            self._tables[table_set.name] = found
        return found

    def pending(self) -> list[TableSet]:
        """Registered sets not migrated by this store yet."""
        return [s for s in _REGISTERED.values() if s.name not in self._done]

    async def migrate(self, conn: AsyncConnection) -> list[str]:
        """Apply the missing migrations of every pending set (``conn`` holds the schema lock);
        the names of the sets migrated, to :meth:`done` once committed."""
        names = []
        for table_set in self.pending():
            tables = self.tables(table_set)
            record = schema_table(MetaData(), f"{self.prefix}{table_set.name}_")
            steps = [(v, d, _bound(run, tables)) for v, d, run in table_set.migrations]
            await apply_migrations(conn, record, steps)
            names.append(table_set.name)
        return names

    def done(self, names: Sequence[str]) -> None:
        self._done.update(names)


def _bound(
    run: SetMigration, tables: Mapping[str, Table]
) -> Callable[[AsyncConnection], Awaitable[None]]:
    async def step(conn: AsyncConnection) -> None:
        await run(conn, tables)

    return step


class TableSetHost:
    """The public interface :class:`~.store.SqlStore` offers the packages keeping tables in its
    database (mixed into the store; see the module docs)."""

    _db: Database
    _t: Tables
    _sets: StoreTableSets

    async def _run(
        self,
        op: str,
        fn: Callable[[AsyncConnection], Awaitable[T]],
        *,
        write: bool = False,
        single: bool = False,
    ) -> T:
        raise NotImplementedError

    async def _ensure_setup(self) -> None:
        raise NotImplementedError

    @property
    def dialect(self) -> str:
        """The database: ``"postgresql"``, ``"mysql"`` (MySQL and MariaDB) or ``"sqlite"``."""
        return self._db.kind

    @property
    def records(self) -> Table:
        """The table the store's records live in: ``khash`` (:meth:`key_hash`, the primary key),
        ``value``, ``nparts`` (0: the value is inline), ``version``, ``expires_at``. A table set
        may join it, and rewrite an inline record in its own transaction as long as it moves
        ``version`` to ``version + 1`` (as a conditional ``put`` would)."""
        return self._t.kv

    def key_hash(self, key: Key) -> bytes:
        """The row id of ``key`` in :attr:`records` (the SHA-256 of its encoding)."""
        return ref(key).h

    def tables(self, table_set: TableSet) -> Mapping[str, Table]:
        """The tables of ``table_set`` in this store (named with its ``table_prefix``), by their
        names without the prefix; ``table_set`` is registered if it was not."""
        register_table_set(table_set)
        return self._sets.tables(table_set)

    async def transaction(
        self,
        op: str,
        fn: Callable[[AsyncConnection], Awaitable[T]],
        *,
        write: bool = False,
        single: bool = False,
    ) -> T:
        """Run ``fn`` in one transaction (``single``: one statement, autocommitted) with the
        store's retries of lock conflicts, once every table (the store's and every registered
        set's) is set up. ``op`` names the operation in errors and traces."""
        return await self._run(op, fn, write=write, single=single)

    async def with_driver(self, op: str, fn: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``fn`` with the driver's own connection (PostgreSQL: an ``asyncpg.Connection``,
        autocommit, no transaction open), with the store's retries of lock conflicts, once every
        table is set up. Statements take numbered parameters (``$1``; :func:`.driver.numbered`)
        and are prepared once per connection by asyncpg. On MySQL/MariaDB it is an asyncmy
        ``Connection`` whose first statement begins a transaction that ``fn`` ends (``COMMIT``
        or ``ROLLBACK``), parameters escaped on the client (:func:`.driver.rendered`). ``op``
        names the operation in errors."""
        if self._db.kind not in ("postgresql", "mysql"):
            raise ConfigurationError(
                f"with_driver runs on PostgreSQL and MySQL only (this store is {self._db.kind}); "
                "use transaction() elsewhere"
            )
        await self._ensure_setup()
        return await self._db.driver(op, fn)
