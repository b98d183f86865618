"""``store_from_url``: one string names a store, for the CLI, examples and configuration files.

**File-backed URLs** (``file:``, ``sqlite:``) name a path on this host and have no host part; the
path is made absolute when the store is built.

* ``file:``: the path after ``file://`` starts with ``/`` (absolute: ``file:///srv/store``), ``~``
  (the home directory: ``file://~/store``) or ``./`` / ``../`` (relative to the current directory:
  ``file://./store``). Any other form (``file://store``, whose ``store`` would be a host name) is
  refused with the forms to use.
* ``sqlite:``: SQLAlchemy's rule. After ``sqlite:///``, a path starting with ``/`` is absolute
  (``sqlite:////srv/store.db``, four slashes), ``~`` is the home directory, and anything else is
  relative to the current directory (``sqlite:///store.db``). ``sqlite://host/...`` is refused.

**Drivers**: before a backend is imported, every package its URL needs is checked at once; a
:class:`~agentscope_teams.errors.MissingDependencyError` names all the missing ones and the one
extra that installs them.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ..errors import ConfigurationError, MissingDependencyError
from .base import StoreBackend
from .redact import redact_url as redact_url  # its home is .redact; kept importable here
from .registry import opener_for

SUPPORTED_SCHEMES = (
    "memory://",
    "file:///path",
    "sqlite:////path",
    "postgresql://user@host/db",
    "mysql://user@host/db",
    "redis://host:port/db",
    "rediss://host:port/db",
    "redis+cluster://host:port[,host:port...]/",
)

_SQL = ("sqlalchemy", "greenlet")
#: URL scheme -> (the extra that installs its drivers, the modules it imports with its default driver).
DRIVERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sqlite": ("sql", (*_SQL, "aiosqlite")),
    "postgresql": ("postgres", (*_SQL, "asyncpg")),
    "postgres": ("postgres", (*_SQL, "asyncpg")),
    "mysql": ("mysql", (*_SQL, "asyncmy")),
    "mariadb": ("mysql", (*_SQL, "asyncmy")),
    "redis": ("redis", ("redis",)),
    "rediss": ("redis", ("redis",)),
    "unix": ("redis", ("redis",)),
}


def require_drivers(url: str) -> None:
    """Raise :class:`MissingDependencyError` naming every package ``url``'s backend needs and
    lacks, with the extra that installs them. A ``+driver`` the URL names is not checked here."""
    scheme = url.partition("://")[0].lower()
    base, _, driver = scheme.partition("+")
    if base not in DRIVERS:
        return
    extra, modules = DRIVERS[base]
    if driver and base not in ("redis", "rediss", "unix"):
        modules = _SQL  # the named driver is the user's choice; create_engine reports it
    missing = [m for m in modules if not _installed(m)]
    if missing:
        raise MissingDependencyError(f"the store URL {redact_url(url)}", extra, missing)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def store_from_url(url: str, **options: Any) -> StoreBackend:
    """Build a store from a URL; ``options`` go to the backend's constructor.

    ``memory://``, ``file:///abs/path`` (or ``file://./rel``, ``file://~/dir``),
    ``sqlite:////abs/path.db`` (or ``sqlite:///./rel.db``), ``postgresql://...``, ``mysql://...``
    (MariaDB too), ``redis://...`` / ``rediss://...``, and a Redis Cluster as
    ``redis+cluster://[user:password@]host:port[,host:port...]/`` (every listed node is a startup
    node; ``rediss+cluster://`` for TLS). SQL URLs may also name their async driver
    (``postgresql+asyncpg://``, ``mysql+asyncmy://``, ``sqlite+aiosqlite://``). See the module
    docs for the rule of file-backed URLs.

    The scheme is looked up in :mod:`.registry` (built-in schemes, the ``agentscope_teams.stores``
    entry points of third-party backends, :func:`~.registry.register_store_scheme`); an unknown
    scheme, or a query option the backend does not take, is a ``ConfigurationError`` naming it.
    """
    return opener_for(url)(url, **options)


def file_store_path(url: str) -> Path:
    """The absolute directory of a ``file:`` URL (see the module docs for the accepted forms)."""
    raw = unquote(url.partition("://")[2])
    if not raw:
        raise ConfigurationError(f"store URL {url!r} names no directory; use file:///abs/path")
    path = _local_path(raw)
    if path is None:
        first = raw.split("/")[0]
        problem = (
            f"{first!r} is not a known user's home"
            if first.startswith("~")
            else f"{first!r} would be a host name, and a file store is a directory on this host"
        )
        raise ConfigurationError(
            f"store URL {url!r} is ambiguous: {problem}; write file:///absolute/path/{raw} "
            f"(absolute), or file://./{raw} (relative to the current directory)"
        )
    return path


def sqlite_url(url: str) -> str:
    """A ``sqlite:`` URL with its path made absolute (see the module docs for the accepted forms)."""
    scheme, _, rest = url.partition("://")
    path, sep, query = rest.partition("?")
    if not path.startswith("/"):
        return _refuse_sqlite(url, path)
    db = path[1:]
    if db in ("", ":memory:"):
        return url  # SqlStore says what to write instead
    found = _local_path(db) or (None if db.startswith("~") else Path(os.path.abspath(db)))
    if found is None:
        return _refuse_sqlite(url, db)
    return f"{scheme}:///{found}{sep}{query}"


def _refuse_sqlite(url: str, path: str) -> str:
    raise ConfigurationError(
        f"SQLite store URL {url!r} does not say where {path!r} is on this host; write "
        f"sqlite:////absolute/path/{path} (four slashes: an absolute path), or sqlite:///{path} "
        "(relative to the current directory)"
    )


def _local_path(raw: str) -> Path | None:
    """``/abs``, ``~...`` or ``./rel`` / ``../rel`` as an absolute path; None for anything else."""
    if raw.startswith("/"):
        return Path(raw)
    if raw.startswith("~"):
        home = os.path.expanduser(raw)  # unchanged when the user is unknown
        return None if home.startswith("~") else Path(home)
    if raw in (".", "..") or raw.startswith(("./", "../")):
        return Path(os.path.abspath(raw))
    return None
