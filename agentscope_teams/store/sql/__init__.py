"""``SqlStore``: the store on SQLite, MySQL/MariaDB or PostgreSQL (the ``sql`` extra).

Modules: :mod:`.store` (the operations), :mod:`.schema` (tables and migrations), :mod:`.tablesets`
(tables other packages keep here, through a public hook), :mod:`.writes`
(per-dialect upserts and appends), :mod:`.chunks` (large values), :mod:`.database` (connections,
transactions, retries), :mod:`.driver` (statements on the driver's connection itself: asyncpg,
asyncmy), :mod:`.spare` (the connections that path keeps between its calls), :mod:`.signals`
(change signals: LISTEN/NOTIFY, coalesced wake-ups) and :mod:`.dialect` (URLs, engines, error
codes, the server clock).
"""

from __future__ import annotations

from ...errors import MissingDependencyError

try:
    # Checked first: the submodules may already be imported while SQLAlchemy is gone.
    import sqlalchemy  # noqa: F401

    from .chunks import DEFAULT_CHUNK_BYTES
    from .dialect import async_url
    from .driver import mysql_affected, mysql_results, mysql_rows, numbered, pyformat, rendered
    from .schema import HEAD_BYTES, LATEST, TABLE_OPTIONS, create_table, hash_type, make_tables
    from .signals import Wakes
    from .store import SqlStore
    from .tablesets import TableSet, register_table_set
except ImportError as _e:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "SqlStore (for SQLite; PostgreSQL needs the extra 'postgres', MySQL/MariaDB 'mysql')",
        "sql",
        [_e.name or "sqlalchemy"],
    ) from _e

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "HEAD_BYTES",
    "LATEST",
    "TABLE_OPTIONS",
    "SqlStore",
    "TableSet",
    "Wakes",
    "async_url",
    "create_table",
    "hash_type",
    "make_tables",
    "mysql_affected",
    "mysql_results",
    "mysql_rows",
    "numbered",
    "pyformat",
    "register_table_set",
    "rendered",
]
