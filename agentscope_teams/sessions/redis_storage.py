"""``RedisSessionStorage`` (the seed's ``RedisStorage``): session storage over a Redis store it owns.

It is a :class:`SessionStorage`, not a store: the store is the :class:`RedisStore` it creates.
``RedisStorage`` stays the same class under the name the seed and AgentScope use; its leading
arguments are AgentScope's (``host, port, db, password``) and ``key_ttl`` is AgentScope's name for
``ttl``. AgentScope's ``connection_pool`` and ``key_config`` have no counterpart (the store opens its
own pool and owns the key layout): passing them is a ``TypeError`` saying so.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from .segments import SegmentCache
from .storage import SessionStorage

_UNSUPPORTED = {
    "connection_pool": "the Redis store opens and sizes its own pool; pass url= or host/port/db",
    "key_config": "the key layout is fixed by agentscope_teams.keys (agent id included)",
}


class RedisSessionStorage(SessionStorage):
    """``SessionStorage`` over a :class:`RedisStore` it creates and closes."""

    def __init__(
        self,
        host: str = "localhost",
        port: int = 6379,
        db: int = 0,
        password: str | None = None,
        *,
        url: str | None = None,
        ttl: float | None = None,
        key_ttl: float | None = None,
        segment_cache: SegmentCache | None = None,
        **store_options: Any,
    ) -> None:
        from ..store.redis import RedisStore

        for name, why in _UNSUPPORTED.items():
            if name in store_options:
                raise TypeError(f"RedisStorage does not take {name}=: {why}")
        if ttl is not None and key_ttl is not None and ttl != key_ttl:
            raise TypeError("give ttl= or key_ttl= (AgentScope's name), not both")
        if url is None:
            auth = f":{quote(password, safe='')}@" if password else ""
            url = f"redis://{auth}{host}:{port}/{db}"
        super().__init__(
            RedisStore(url, **store_options),
            ttl=ttl if ttl is not None else key_ttl,
            owns_store=True,
            segment_cache=segment_cache,
        )


#: The seed's (and AgentScope's) name for :class:`RedisSessionStorage`.
RedisStorage = RedisSessionStorage
