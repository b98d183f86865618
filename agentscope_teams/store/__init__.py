"""Stores: the :class:`BaseStore` protocol and its backends, built directly or by :func:`store_from_url`.

Backends with optional drivers (``RedisStore``, ``SqlStore``) import lazily; a missing driver raises
:class:`~agentscope_teams.errors.MissingDependencyError` naming the extra to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    BaseStore,
    Entry,
    Fence,
    Key,
    StoreBackend,
    decode_key,
    encode_key,
    validate_key,
)
from .memory import InMemoryStore
from .url import redact_url, store_from_url

if TYPE_CHECKING:
    from .jsonfile import JsonFileStore
    from .redis import RedisStore
    from .sql import SqlStore

__all__ = [
    "BaseStore",
    "Entry",
    "Fence",
    "InMemoryStore",
    "JsonFileStore",
    "Key",
    "RedisStore",
    "SqlStore",
    "StoreBackend",
    "decode_key",
    "encode_key",
    "redact_url",
    "store_from_url",
    "validate_key",
]


def __getattr__(name: str) -> Any:
    if name == "StoreBase":  # renamed: it was easy to confuse with the BaseStore protocol
        import warnings

        warnings.warn("StoreBase is renamed StoreBackend", DeprecationWarning, stacklevel=2)
        return StoreBackend
    if name == "JsonFileStore":
        from .jsonfile import JsonFileStore

        return JsonFileStore
    if name == "RedisStore":
        from .redis import RedisStore

        return RedisStore
    if name == "SqlStore":
        from .sql import SqlStore

        return SqlStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
