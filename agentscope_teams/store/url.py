"""``store_from_url``: one string names a store, for the CLI, examples and configuration files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import ConfigurationError
from .base import StoreBackend

SUPPORTED_SCHEMES = (
    "memory://",
    "file:///path",
    "sqlite:///path",
    "postgresql://user@host/db",
    "mysql://user@host/db",
    "redis://host:port/db",
    "rediss://host:port/db",
)


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``."""
    return re.sub(r"(?<=://)([^:/@]*):[^@/]*@", r"\1:***@", url)


def store_from_url(url: str, **options: Any) -> StoreBackend:
    """Build a store from a URL; ``options`` go to the backend's constructor.

    ``memory://``, ``file:///abs/path`` (or ``file://./rel``), ``sqlite:///path.db``,
    ``postgresql://...``, ``mysql://...`` (MariaDB too), ``redis://...`` / ``rediss://...``. SQL URLs
    may also name their async driver (``postgresql+asyncpg://``, ``mysql+asyncmy://``,
    ``sqlite+aiosqlite://``).
    """
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    base = scheme.split("+", 1)[0]
    if base == "memory":
        from .memory import InMemoryStore

        return InMemoryStore(**options)
    if base == "file":
        from .jsonfile import JsonFileStore

        parts = urlsplit(url)
        raw = unquote((parts.netloc or "") + parts.path)
        if not raw:
            raise ConfigurationError(f"store URL {url!r} names no directory; use file:///abs/path")
        return JsonFileStore(Path(raw).expanduser(), **options)
    if base in ("sqlite", "postgresql", "postgres", "mysql", "mariadb"):
        from .sql import SqlStore

        return SqlStore(url, **options)
    if base in ("redis", "rediss", "unix"):
        from .redis import RedisStore

        return RedisStore(url, **options)
    raise ConfigurationError(
        f"unsupported store URL {redact_url(url)!r}: supported forms are "
        + ", ".join(SUPPORTED_SCHEMES)
    )
