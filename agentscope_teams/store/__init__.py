"""Stores: the :class:`BaseStore` protocol and its backends, built directly or by :func:`store_from_url`.

Backends with optional drivers (``RedisStore``, ``SqlStore``) import lazily; a missing driver raises
:class:`~agentscope_teams.errors.MissingDependencyError` naming the extra to install. A backend
declares what it can do in its ``capabilities`` (:func:`capabilities_of`); backends register by URL
scheme (:mod:`.registry`, the ``agentscope_teams.stores`` entry points), and
:mod:`agentscope_teams.testing` holds the conformance suite every backend passes (``docs/stores.md``).
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
from .capabilities import StoreCapabilities, capabilities_of
from .memory import InMemoryStore
from .registry import register_store_scheme, store_schemes
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
    "StoreCapabilities",
    "capabilities_of",
    "decode_key",
    "encode_key",
    "redact_url",
    "register_store_scheme",
    "store_from_url",
    "store_schemes",
    "validate_key",
]


#: Backends imported on first use (their drivers are optional): name -> module.
_LAZY = {"JsonFileStore": ".jsonfile", "RedisStore": ".redis", "SqlStore": ".sql"}


def __getattr__(name: str) -> Any:
    if name == "StoreBase":  # renamed: it was easy to confuse with the BaseStore protocol
        import warnings

        warnings.warn("StoreBase is renamed StoreBackend", DeprecationWarning, stacklevel=2)
        return StoreBackend
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
