"""``RedisSessionStorage`` (the seed's ``RedisStorage``): session storage over a Redis store it owns.

It is a :class:`SessionStorage`, not a store: the store is the :class:`RedisStore` it creates.
``RedisStorage`` stays the same class under the name the seed and AgentScope use.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from .storage import SessionStorage


class RedisSessionStorage(SessionStorage):
    """``SessionStorage`` over a :class:`RedisStore` it creates and closes."""

    def __init__(
        self,
        host: str = "localhost",
        port: int = 6379,
        db: int = 0,
        *,
        url: str | None = None,
        password: str | None = None,
        ttl: float | None = None,
        **store_options: Any,
    ) -> None:
        from ..store.redis import RedisStore

        if url is None:
            auth = f":{quote(password, safe='')}@" if password else ""
            url = f"redis://{auth}{host}:{port}/{db}"
        super().__init__(RedisStore(url, **store_options), ttl=ttl, owns_store=True)


#: The seed's (and AgentScope's) name for :class:`RedisSessionStorage`.
RedisStorage = RedisSessionStorage
