"""``RedisStorage``: the seed's name for a :class:`SessionStorage` over a Redis store it owns."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from .storage import SessionStorage


class RedisStorage(SessionStorage):
    """``SessionStorage`` over a :class:`RedisStore` it creates and closes (the seed's RedisStorage)."""

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
