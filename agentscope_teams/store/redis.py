"""``RedisStore``: the store on Redis via redis-py asyncio; conditional writes are Lua scripts.

Key layout. ``N`` is the namespace, ``T`` is ``hash_tag_segments``; segments are escaped by
:func:`~agentscope_teams.store.base.encode_segment`, so ``{``, ``}``, ``:``, ``*`` never appear raw.
The name of a key or prefix ``(s1, .., sn)`` is ``N:{s1/../sT}/sT+1/../sn`` (``N:{s1/../sn}`` when
``n <= T``)::

    <name>                 entry: hash {v: value, n: version}; PEXPIRE when written with a ttl
    <name of prefix>:idx   index of a prefix: sorted set, score 0, one member per key below it
                           (the key's encoding relative to the prefix), listed with ZRANGEBYLEX
    N::idx                 index of the empty prefix (every key of the namespace)
    <name>:stream          stream entries: a Redis stream whose ids are ``0-<seq>``
    <name>:seq             the stream's counter (INCR); delete_stream keeps it, so seqs never repeat

Hash tags: the tag is the first ``T`` segments, so an entry, its stream, its counter and the indexes
of its prefixes with at least ``T`` segments share one Redis Cluster slot; append is a script over
same-tag keys only. The put/delete scripts additionally update the indexes of the key's prefixes
*shorter* than ``T`` (the empty prefix and the first ``T - 1`` levels), which hash to other slots.
That is fine on one Redis server (with replicas or Sentinel), which this store targets. Redis
Cluster would reject those two scripts with CROSSSLOT; running there needs the short-prefix indexes
kept outside the scripts.

Expiry: an expired entry stays a member of its indexes until a ``list_keys`` meets it (listing
checks that each member's entry exists, then removes the member from every index of the key,
atomically, so a concurrent re-create is kept) or the key is deleted.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from ..errors import (
    ConfigurationError,
    MissingDependencyError,
    StoreUnavailableError,
    VersionConflict,
)
from .base import (
    DEFAULT_MAX_VALUE_BYTES,
    Entry,
    Key,
    StoreBase,
    check_expected,
    decode_key,
    encode_key,
    encode_prefix,
    encode_segment,
    validate_key,
    validate_prefix,
)
from .url import redact_url

if TYPE_CHECKING:
    from redis.asyncio import Redis

DEFAULT_URL = "redis://127.0.0.1:6379/0"

# KEYS: entry, ancestor indexes. ARGV: expected ('' = any), value, ttl ms ('' = none), members.
_PUT = """
local found = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
if ARGV[1] ~= '' and tonumber(ARGV[1]) ~= found then return {0, found} end
local version = redis.call('HINCRBY', KEYS[1], 'n', 1)
redis.call('HSET', KEYS[1], 'v', ARGV[2])
if ARGV[3] ~= '' then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
elseif found > 0 then
  redis.call('PERSIST', KEYS[1])
end
if found == 0 then
  for i = 2, #KEYS do redis.call('ZADD', KEYS[i], 0, ARGV[i + 2]) end
end
return {1, version}
"""

# KEYS: entry, ancestor indexes. ARGV: expected ('' = any), members. An absent entry's members are
# removed too: that is how stale index members of expired entries are cleaned (expected '0').
_DELETE = """
local found = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
if ARGV[1] ~= '' and tonumber(ARGV[1]) ~= found then return {0, found} end
redis.call('DEL', KEYS[1])
for i = 2, #KEYS do redis.call('ZREM', KEYS[i], ARGV[i]) end
return {1, found}
"""

# KEYS: stream, counter. ARGV: value.
_APPEND = """
local seq = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], string.format('0-%d', seq), 'v', ARGV[1])
return seq
"""


def _load_redis() -> Any:
    try:
        import redis.asyncio
        import redis.exceptions
    except ImportError as exc:
        raise MissingDependencyError("RedisStore", "redis") from exc
    return redis


class RedisStore(StoreBase):
    """A store on one Redis server, shared by every process and host that can reach it."""

    shared_across_processes = True
    shared_across_hosts = True

    def __init__(
        self,
        url: str | None = None,
        *,
        client: Redis | None = None,
        namespace: str = "ast",
        hash_tag_segments: int = 3,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    ) -> None:
        super().__init__(max_value_bytes=max_value_bytes)
        redis = _load_redis()
        _check_options(namespace, hash_tag_segments)
        if url is not None and client is not None:
            raise ConfigurationError("RedisStore takes a url or a client, not both")
        self.namespace = namespace
        self.hash_tag_segments = hash_tag_segments
        self._owns_client = client is None
        if client is None:
            url = url or DEFAULT_URL
            client = _client_from_url(redis, url)
        self._client: Redis = client
        self._where = redact_url(url) if url is not None else _describe(client)
        if client.connection_pool.connection_kwargs.get("decode_responses"):
            raise ConfigurationError(
                f"the Redis client for {self._where} has decode_responses=True; RedisStore stores "
                "bytes, so pass a client created with decode_responses=False"
            )
        self._errors: tuple[type[Exception], ...] = (
            redis.exceptions.ConnectionError,
            redis.exceptions.TimeoutError,
        )
        self._put = client.register_script(_PUT)
        self._delete = client.register_script(_DELETE)
        self._append = client.register_script(_APPEND)

    # -- plumbing --------------------------------------------------------------------------

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except self._errors as exc:
            raise StoreUnavailableError(
                f"Redis at {self._where} is unavailable ({exc}); check that the server is running "
                "and reachable and that the URL and credentials are right"
            ) from exc

    def _name(self, key: Key, kind: str = "") -> str:
        enc = [encode_segment(s) for s in key]
        t = self.hash_tag_segments
        tail = "".join("/" + e for e in enc[t:])
        return f"{self.namespace}:{{{'/'.join(enc[:t])}}}{tail}{kind}"

    def _index(self, prefix: Key) -> str:
        return self._name(prefix, ":idx") if prefix else f"{self.namespace}::idx"

    def _ancestors(self, key: Key) -> tuple[list[str], list[str]]:
        """The index keys of every proper prefix of ``key`` and ``key``'s member in each."""
        return (
            [self._index(key[:d]) for d in range(len(key))],
            [encode_key(key[d:]) for d in range(len(key))],
        )

    async def setup(self) -> None:
        """Check that the server answers and load the scripts (one round trip)."""
        with self._guard():
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.ping()
                for script in (_PUT, _DELETE, _APPEND):
                    pipe.script_load(script)
                await pipe.execute()

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    # -- entries ---------------------------------------------------------------------------

    async def get(self, key: Key) -> Entry | None:
        name = self._name(validate_key(key))
        with self._guard():
            value, version = await self._client.hmget(name, ["v", "n"])
        if value is None or version is None:
            return None
        return Entry(cast(bytes, value), int(version))

    async def put(
        self,
        key: Key,
        value: bytes,
        *,
        expected_version: int | None = None,
        ttl: float | None = None,
    ) -> int:
        k = self._check_put(key, value, expected_version, ttl)
        indexes, members = self._ancestors(k)
        ttl_ms = "" if ttl is None else str(max(1, math.ceil(ttl * 1000)))
        args: list[bytes | str] = [_expected(expected_version), bytes(value), ttl_ms, *members]
        with self._guard():
            ok, found = await self._put(keys=[self._name(k), *indexes], args=args)
        if not ok:
            raise VersionConflict(k, expected_version, int(found))
        return int(found)

    async def delete(self, key: Key, *, expected_version: int | None = None) -> bool:
        k = validate_key(key)
        check_expected(expected_version)
        ok, found = await self._delete_script(k, _expected(expected_version))
        if not ok:
            raise VersionConflict(k, expected_version, int(found))
        return int(found) > 0

    async def _delete_script(self, key: Key, expected: str) -> tuple[int, int]:
        indexes, members = self._ancestors(key)
        with self._guard():
            ok, found = await self._delete(
                keys=[self._name(key), *indexes], args=[expected, *members]
            )
        return int(ok), int(found)

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        self._check_page(limit)
        p = validate_prefix(prefix)
        start = _range_start(
            encode_prefix(p), None if after is None else encode_key(validate_key(after, "after"))
        )
        out: list[Key] = []
        while start is not None and len(out) < limit:
            batch = max(limit - len(out), 32)
            with self._guard():
                raw = await self._client.zrangebylex(self._index(p), start, "+", 0, batch)
            members = [cast(bytes, m).decode() for m in raw]
            out.extend(await self._live([p + decode_key(m) for m in members]))
            start = "(" + members[-1] if len(members) == batch else None
        return out[:limit]

    async def _live(self, keys: list[Key]) -> list[Key]:
        """The keys whose entries exist; drops the index members of the others."""
        if not keys:
            return []
        with self._guard():
            async with self._client.pipeline(transaction=False) as pipe:
                for k in keys:
                    pipe.exists(self._name(k))
                exists = await pipe.execute()
        for k, alive in zip(keys, exists, strict=True):
            if not alive:
                await self._delete_script(k, "0")  # a no-op if the key was created meanwhile
        return [k for k, alive in zip(keys, exists, strict=True) if alive]

    # -- streams ---------------------------------------------------------------------------

    async def append(self, stream: Key, value: bytes) -> int:
        k = self._check_append(stream, value)
        with self._guard():
            seq = await self._append(
                keys=[self._name(k, ":stream"), self._name(k, ":seq")], args=[bytes(value)]
            )
        return int(seq)

    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]:
        k = validate_key(stream, "stream")
        self._check_page(limit, after)
        with self._guard():
            rows = await self._client.xrange(
                self._name(k, ":stream"), min=f"0-{after + 1}", max="+", count=limit
            )
        return [
            (
                int(cast(bytes, rid).split(b"-")[1]),
                cast(dict[bytes, bytes], fields)[b"v"],
            )
            for rid, fields in rows or []
        ]

    async def delete_stream(self, stream: Key) -> bool:
        name = self._name(validate_key(stream, "stream"), ":stream")
        with self._guard():
            return bool(await self._client.delete(name))


def _expected(expected_version: int | None) -> str:
    return "" if expected_version is None else str(expected_version)


def _range_start(prefix_enc: str, after_enc: str | None) -> str | None:
    """The ZRANGEBYLEX start in a prefix's index for keys after ``after``; None if none can be."""
    if after_enc is None:
        return "-"
    if after_enc.startswith(prefix_enc):
        return "(" + after_enc[len(prefix_enc) :]
    return "-" if after_enc < prefix_enc else None


def _check_options(namespace: str, hash_tag_segments: int) -> None:
    if not isinstance(namespace, str) or not namespace or any(c in namespace for c in "{}"):
        raise ConfigurationError(
            f"Redis namespace {namespace!r} must be a non-empty string without '{{' or '}}'"
        )
    if not isinstance(hash_tag_segments, int) or hash_tag_segments < 1:
        raise ConfigurationError(
            f"hash_tag_segments must be an int >= 1, got {hash_tag_segments!r}"
        )


def _client_from_url(redis: Any, url: str) -> Redis:
    try:
        return cast("Redis", redis.asyncio.Redis.from_url(url, socket_connect_timeout=5))
    except ValueError as exc:
        raise ConfigurationError(
            f"invalid Redis URL {redact_url(url)!r} ({exc}); "
            "use redis://[user:password@]host:port/db"
        ) from exc


def _describe(client: Redis) -> str:
    """A password-free description of where an injected client connects."""
    kw = client.connection_pool.connection_kwargs
    if "path" in kw:
        return f"unix://{kw['path']}"
    return f"redis://{kw.get('host', 'localhost')}:{kw.get('port', 6379)}/{kw.get('db', 0)}"


__all__ = ["RedisStore"]
