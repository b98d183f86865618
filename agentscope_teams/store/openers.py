"""The openers of the built-in store URL schemes (registered in :mod:`.registry`).

Each opener checks its URL's query options before building the store: an option the backend (or
its driver) does not take is a :class:`~agentscope_teams.errors.ConfigurationError` naming it,
not a ``TypeError`` from deep inside a driver at the first query. ``memory:`` and ``file:`` URLs
take none. SQL URLs are checked against their default driver (``asyncpg``, ``asyncmy``, SQLite);
a URL naming its own ``+driver`` is left to that driver.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..errors import ConfigurationError
from .base import StoreBackend
from .redact import redact_url
from .url import file_store_path, require_drivers, sqlite_url

#: Options SQLAlchemy's asyncpg adapter takes itself, besides ``asyncpg.connect``'s.
_ASYNCPG_ADAPTER = frozenset({"prepared_statement_cache_size", "prepared_statement_name_func"})


def open_memory(url: str, **options: Any) -> StoreBackend:
    from .memory import InMemoryStore

    _no_query(url, "a memory store")
    return InMemoryStore(**options)


def open_file(url: str, **options: Any) -> StoreBackend:
    from .jsonfile import JsonFileStore

    _no_query(url, "a file store")
    return JsonFileStore(file_store_path(url), **options)


def open_sql(url: str, **options: Any) -> StoreBackend:
    sql_url = sqlite_url(url) if url.lower().startswith("sqlite") else url
    require_drivers(sql_url)
    check_sql_query(sql_url)
    from .sql import SqlStore

    return SqlStore(sql_url, **options)


def open_redis(url: str, **options: Any) -> StoreBackend:
    require_drivers(url)
    from .redis import RedisStore

    return RedisStore(url, **options)


def _no_query(url: str, what: str) -> None:
    query = urlsplit(url).query
    if query:
        names = ", ".join(sorted(parse_qs(query, keep_blank_values=True))) or query
        raise ConfigurationError(
            f"store URL {redact_url(url)!r} has query option(s) {names}, but {what} takes none; "
            "pass options to store_from_url as keyword arguments (write a '?' that is part of "
            "a path as %3F)"
        )


def check_sql_query(url: str) -> None:
    """Refuse a query option the SQL URL's default driver does not take, by name."""
    if "+" in url.partition("://")[0] or "?" not in url:
        return
    from sqlalchemy.engine import make_url

    from .sql.dialect import async_url

    parsed = make_url(async_url(url))
    given = set(parsed.query)
    with warnings.catch_warnings():  # SQLite warns about what it ignores: we refuse it instead
        warnings.simplefilter("ignore")
        _, kwargs = parsed.get_dialect()().create_connect_args(parsed)
    driver = parsed.get_driver_name()
    if driver == "aiosqlite":
        unknown = set() if "uri" in given else given - set(kwargs)
    else:
        unknown = set(kwargs) & given - _driver_options(driver)
    if unknown:
        hint = "; asyncpg spells sslmode=require as ssl=require" if "sslmode" in unknown else ""
        raise ConfigurationError(
            f"SQL store URL {redact_url(url)!r} has unknown query option(s) "
            f"{', '.join(sorted(unknown))}; {driver} takes none such (see its connect() "
            f"arguments), so drop or correct them{hint}"
        )


def _driver_options(driver: str) -> set[str]:
    if driver == "asyncpg":
        import asyncpg

        return {*inspect.signature(asyncpg.connect).parameters, *_ASYNCPG_ADAPTER}
    if driver == "asyncmy":
        import asyncmy

        return set(inspect.signature(asyncmy.connect).parameters)
    return set()
