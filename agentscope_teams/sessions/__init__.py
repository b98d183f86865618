"""Sessions: the seed's session API over any store (:mod:`.storage`), its records (:mod:`.records`),
and listings that report unreadable records instead of failing (:mod:`.listing`)."""

from __future__ import annotations

from ..listing import Listing, Unreadable  # re-exported: the listings of every record kind
from .records import (
    SESSION_SCHEMA_VERSION,
    SessionConfig,
    SessionRecord,
    SessionSource,
)
from .records import _Body as _Body  # the persisted body (bench/session_roundtrip.py parses it)
from .redis_storage import RedisSessionStorage, RedisStorage
from .storage import SessionStorage, session_key

__all__ = [
    "SESSION_SCHEMA_VERSION",
    "Listing",
    "RedisSessionStorage",
    "RedisStorage",
    "SessionConfig",
    "SessionRecord",
    "SessionSource",
    "SessionStorage",
    "Unreadable",
    "session_key",
]
