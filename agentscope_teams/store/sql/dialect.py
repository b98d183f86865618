"""What differs between SQLite, MySQL/MariaDB and PostgreSQL outside the statements themselves.

URL mapping to the async drivers, engine creation, the server clock as a SQL expression, and the
error codes that tell a transient lock conflict from a real failure.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import ArgumentError, DBAPIError, InvalidRequestError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from ...errors import ConfigurationError, MissingDependencyError
from ..redact import redact_text, redact_url
from ..url import require_drivers

# scheme -> (async dialect+driver, extra that installs the driver)
SCHEMES = {
    "sqlite": ("sqlite+aiosqlite", "sql"),
    "postgresql": ("postgresql+asyncpg", "postgres"),
    "postgres": ("postgresql+asyncpg", "postgres"),
    "mysql": ("mysql+asyncmy", "mysql"),
    "mariadb": ("mysql+asyncmy", "mysql"),
}

#: The database server's clock in seconds since the epoch, as a float, per kind of database.
NOW_SQL = {
    "postgresql": "CAST(EXTRACT(EPOCH FROM statement_timestamp()) AS DOUBLE PRECISION)",
    "mysql": "UNIX_TIMESTAMP(NOW(6))",
    "sqlite": "((julianday('now') - 2440587.5) * 86400.0)",
}


def async_url(url: str) -> str:
    """Map a plain SQL URL to its async driver (``postgres://`` -> ``postgresql+asyncpg://``).

    An explicit ``+driver`` is kept; ``postgres`` and ``mariadb`` become ``postgresql`` and ``mysql``.
    """
    scheme, sep, rest = url.partition("://")
    base, _, driver = scheme.lower().partition("+")
    if not sep or base not in SCHEMES:
        raise ConfigurationError(
            f"{redact_url(url)!r} is not a SQL store URL; use sqlite:////abs/path.db, "
            "postgresql://user@host/db or mysql://user@host/db"
        )
    target = SCHEMES[base][0]
    if driver:
        target = f"{target.partition('+')[0]}+{driver}"
    if base == "sqlite" and rest.strip("/") in ("", ":memory:"):
        raise ConfigurationError(
            f"SQLite store URL {redact_url(url)!r} names no database file; use sqlite:////abs/path/to/store.db "
            "(or memory:// for a process-local store)"
        )
    return f"{target}://{rest}"


def create_engine(url: str, connect_timeout: float, opts: dict[str, Any]) -> AsyncEngine:
    """An ``AsyncEngine`` for ``url`` with per-dialect connect arguments; ``opts`` is modified."""
    full = async_url(url)
    base = url.partition("://")[0].lower().partition("+")[0]
    kind = SCHEMES[base][0].partition("+")[0]
    args: dict[str, Any] = {}
    if kind == "postgresql":
        args["timeout"] = connect_timeout
    elif kind == "mysql":
        args["connect_timeout"] = max(1, round(connect_timeout))
        opts.setdefault("isolation_level", "READ COMMITTED")
        opts.setdefault("pool_recycle", 3600)
    if args:
        opts["connect_args"] = {**args, **opts.get("connect_args", {})}
    require_drivers(url)  # every missing package at once, not one per attempt
    try:
        return create_async_engine(full, **opts)
    except ImportError as e:
        if full.partition("://")[0] == SCHEMES[base][0]:
            raise MissingDependencyError(f"SqlStore for {redact_url(url)}", SCHEMES[base][1]) from e
        raise ConfigurationError(
            f"the driver named by SQL store URL {redact_url(url)} is not installed ({redact_text(str(e), url)}); "
            f"install it, or drop the '+driver' part to use {SCHEMES[base][0]}"
        ) from e
    except (ArgumentError, InvalidRequestError) as e:
        raise ConfigurationError(
            f"cannot use SQL store URL {redact_url(url)}: {redact_text(str(e), url)}"
        ) from e


def kind_of(dialect_name: str) -> str:
    """``mysql`` for MySQL and MariaDB, else the dialect's own name."""
    return "mysql" if dialect_name in ("mysql", "mariadb") else dialect_name


def mysql_code(e: DBAPIError) -> int | None:
    """The MySQL error number of ``e`` (1062 duplicate key, 1213 deadlock, ...), if any."""
    args = getattr(e.orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def is_transient(kind: str, e: DBAPIError) -> bool:
    """Deadlock, lock timeout, serialization failure or SQLite busy/locked: safe to retry."""
    orig = e.orig
    if kind == "sqlite":
        code = getattr(orig, "sqlite_errorcode", None)
        return isinstance(code, int) and code & 0xFF in (5, 6)
    if kind == "mysql":
        return mysql_code(e) in (1205, 1213)
    return getattr(orig, "sqlstate", None) in ("40001", "40P01")


def reason(e: BaseException) -> str:
    """The driver's message for ``e`` (its type name when it has none)."""
    orig = e.orig if isinstance(e, DBAPIError) else e
    return str(orig) or type(orig).__name__


def code_of(e: DBAPIError) -> str:
    """The database's own code for ``e`` (SQLSTATE, MySQL error number, SQLite error name), or
    the driver's error class: what a failure may say of itself without the driver's words."""
    orig = e.orig
    state = getattr(orig, "sqlstate", None)
    if isinstance(state, str) and state:
        return f"SQLSTATE {state}"
    number = mysql_code(e)
    if number is not None:
        return f"MySQL error {number}"
    name = getattr(orig, "sqlite_errorname", None)
    return str(name) if isinstance(name, str) and name else type(orig).__name__
