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

Hash tags (one server): the tag is the first ``T`` segments, so an entry, its stream, its counter and
the indexes of its prefixes with at least ``T`` segments share one hash slot. The put/delete scripts
also update the indexes of the key's prefixes *shorter* than ``T``; on one server that is fine.

**Redis Cluster** (a ``RedisCluster`` client, URL ``redis+cluster://host:port[,host:port...]/``):
keys are tagged by their key-registry group without the family literal, and the scripts only touch
indexes in the key's own slot; prefixes shorter than the tag are listed through tag registries
written outside the scripts. The single-server layout above is unchanged. Every script declares
every key it touches in KEYS, and a command refused while its slot migrates (ASK / TRYAGAIN) is
retried for up to ``migration_timeout`` seconds. See :mod:`._redis_cluster` and
``docs/redis-cluster.md`` ("Slot migration").

Keys written with ``indexed=False`` (leases) go through the same scripts with no index keys: no
index is touched on create or delete, and ``list_keys`` never shows them. Fenced writes
(``put(fence=...)``) use variants of the put/update scripts that first compare the fence key's value
(``HGET v``) and, on release, ``DEL`` it after the write: one command. The fence key is passed in
KEYS, so the check is atomic; on Redis Cluster it must hash to the entry's slot (a session's lease
does: same user group), else the put raises ``ConfigurationError``.

Signals (:class:`~.base.Signals`): ``signal(channel)`` is a ``PUBLISH`` on ``<name>:signal`` (the
channel key's name, so it carries the team's hash tag); waiting goes through one shared pub/sub
connection per store (:mod:`._redis_signals`). Set ``signals_enabled = False`` to make callers poll.

Expiry: an expired entry stays a member of its indexes until a ``list_keys`` meets it (listing
checks that each member's entry exists, then removes the member from every index of the key,
atomically, so a concurrent re-create is kept) or the key is deleted.

Hot path: a key's Redis names (entry, ancestor indexes and members) are computed once and kept in a
bounded per-store cache, so a put or get of a known key does no escaping. A store built from a URL
lets at most ``max_connections`` operations run at once per event loop (a semaphore gate, as on a
cluster): more wait up to ``pool_timeout`` seconds for a turn instead of failing with "Too many
connections". Behind the gate is a plain connection pool: redis-py's blocking pool costs a lock,
a condition and a timeout timer per acquisition even when a connection is free (≈ 28% of client
CPU at 1,000 concurrent operations, ``python -m bench redis_pool``); the gate takes a free turn
without a timer.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio

from ..errors import (
    ConfigurationError,
    LeaseLostError,
    MissingDependencyError,
    StoreUnavailableError,
    VersionConflict,
)
from . import _redis_cluster as cluster
from ._redis_signals import Subscriber
from .base import (
    DEFAULT_MAX_VALUE_BYTES,
    Entry,
    Fence,
    Key,
    StoreBackend,
    check_expected,
    decode_key,
    encode_key,
    encode_prefix,
    encode_segment,
    validate_key,
    validate_prefix,
)
from .capabilities import StoreCapabilities
from .redact import redact_text, redact_url

if TYPE_CHECKING:
    from redis.asyncio import Redis, RedisCluster

log = logging.getLogger(__name__)
_T = TypeVar("_T")

DEFAULT_URL = "redis://127.0.0.1:6379/0"
DEFAULT_MAX_CONNECTIONS = 64
_NAME_CACHE_SIZE = 4096

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

# The CAS of an existing entry (expected version > 0): it never creates the entry, so it needs no
# index keys (half the arguments to send). KEYS: entry. ARGV: expected, value, ttl ms ('' = none).
_UPDATE = """
local found = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
if tonumber(ARGV[1]) ~= found then return {0, found} end
local version = redis.call('HINCRBY', KEYS[1], 'n', 1)
redis.call('HSET', KEYS[1], 'v', ARGV[2])
if ARGV[3] ~= '' then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
else
  redis.call('PERSIST', KEYS[1])
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

# Fenced variants: the fence key is the last of KEYS; the last two ARGV are the value the fence key
# must hold and '1' to delete the fence key (release) once the write succeeded. The check comes
# first: a lost fence returns {-1, 0} and writes nothing.
_FENCE_CHECK = """
local fence = KEYS[#KEYS]
if redis.call('HGET', fence, 'v') ~= ARGV[#ARGV - 1] then return {-1, 0} end
"""
_FENCE_RELEASE = "if ARGV[#ARGV] == '1' then redis.call('DEL', fence) end\n"
_DONE = "return {1, version}"


def _fenced(script: str) -> str:
    body = script.replace("for i = 2, #KEYS do", "for i = 2, #KEYS - 1 do")
    assert body.count(_DONE) == 1
    return _FENCE_CHECK + body.replace(_DONE, _FENCE_RELEASE + _DONE)


_PUT_FENCED = _fenced(_PUT)
_UPDATE_FENCED = _fenced(_UPDATE)

# KEYS: entries. Whether each exists, in one command (listing checks a page of index members).
_EXISTS = """
local out = {}
for i = 1, #KEYS do out[i] = redis.call('EXISTS', KEYS[i]) end
return out
"""

# KEYS: stream, counter. ARGV: value.
_APPEND = """
local seq = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], string.format('0-%d', seq), 'v', ARGV[1])
return seq
"""


_SCRIPTS = (_PUT, _UPDATE, _DELETE, _EXISTS, _APPEND, _PUT_FENCED, _UPDATE_FENCED)


def _load_redis() -> Any:
    try:
        import redis.asyncio
        import redis.exceptions
    except ImportError as exc:
        raise MissingDependencyError("RedisStore", "redis") from exc
    return redis


class _NoTurn:
    """The gate of an injected single-server client: its own pool decides how callers wait."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


_NO_TURN = _NoTurn()
#: The public form of an unreachable Redis (see :func:`~agentscope_teams.errors.public_message`).
_UNREACHABLE = "the {} store cannot be reached; the server's log names the cause"


def _no_turn(reserve: bool = False) -> _NoTurn:
    return _NO_TURN


class RedisStore(StoreBackend):
    """A store on one Redis server or a Redis Cluster, shared by every process and host that can
    reach it."""

    shared_across_processes = True
    shared_across_hosts = True
    #: How long ``setup()`` retries reading a cluster's slot map while a node is down.
    cluster_setup_timeout = 15.0
    #: How long a command refused while its slot migrates (ASK / TRYAGAIN) is retried.
    migration_timeout = 30.0

    def __init__(
        self,
        url: str | None = None,
        *,
        client: Redis | RedisCluster | None = None,
        namespace: str = "ast",
        hash_tag_segments: int = 3,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        pool_timeout: float = 20.0,
    ) -> None:
        super().__init__(max_value_bytes=max_value_bytes)
        redis = _load_redis()
        _check_options(namespace, hash_tag_segments)
        if url is not None and client is not None:
            raise ConfigurationError("RedisStore takes a url or a client, not both")
        self.namespace = namespace
        self.hash_tag_segments = hash_tag_segments
        self._owns_client = client is None
        # Escaping is done once per key: key -> (entry name, ancestor index names, members), and
        # stream -> (stream name, counter name).
        self._names: dict[Key, tuple[str, list[str], list[str]]] = {}
        self._streams: dict[Key, tuple[str, str]] = {}
        if client is None:
            url = url or DEFAULT_URL
            if cluster.is_cluster_url(url):
                _check_pool(max_connections, pool_timeout)
                client = cluster.cluster_client(redis, url, max_connections)
            else:
                client = _client_from_url(redis, url, max_connections, pool_timeout)
        self._client: Any = cast(Any, client)
        self._redis = redis
        #: True on Redis Cluster: keys are tagged by their key-registry group (see the module docs).
        self.cluster = isinstance(client, redis.asyncio.cluster.RedisCluster)
        self._registered: set[tuple[str, str]] = set()  # range members this store has written
        if self.cluster:
            self._where = cluster.describe_cluster(client)
            gate = cluster.Gate(max_connections, pool_timeout, f"Redis Cluster {self._where}")
            self._turn: Any = gate.turn
            kwargs = client.get_connection_kwargs()
        else:
            self._where = redact_url(url) if url is not None else _describe(self._client)
            self._turn = _no_turn
            if self._owns_client:
                self._turn = cluster.Gate(
                    max_connections, pool_timeout, f"Redis {self._where}"
                ).turn
            kwargs = self._client.connection_pool.connection_kwargs
        if kwargs.get("decode_responses"):
            raise ConfigurationError(
                f"the Redis client for {self._where} has decode_responses=True; RedisStore stores "
                "bytes, so pass a client created with decode_responses=False"
            )
        self._errors: tuple[type[Exception], ...] = (
            redis.exceptions.ConnectionError,
            redis.exceptions.TimeoutError,
            *(cluster.cluster_errors(redis) if self.cluster else ()),
        )
        self._put = client.register_script(_PUT)
        self._update = client.register_script(_UPDATE)
        self._delete = client.register_script(_DELETE)
        self._exists = client.register_script(_EXISTS)
        self._append = client.register_script(_APPEND)
        self._put_fenced = client.register_script(_PUT_FENCED)
        self._update_fenced = client.register_script(_UPDATE_FENCED)
        self._subscriber = Subscriber(client)
        self.signals_enabled = True

    @property
    def capabilities(self) -> StoreCapabilities:
        """The Redis board queue, signals (unless ``signals_enabled`` is False), fencing,
        listing; shared by every process and host that reaches the server."""
        return StoreCapabilities(
            signals=self.signals_enabled, board_queue="redis", shared_across_hosts=True
        )

    # -- plumbing --------------------------------------------------------------------------

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except self._errors as exc:
            if self.cluster:
                node = cluster.node_of(exc)
                at = f" (node {node})" if node else ""
                raise StoreUnavailableError(
                    f"Redis Cluster {self._where}{at} is unavailable ({type(exc).__name__}: "
                    f"{exc}); check that its nodes are running and reachable, that every slot is "
                    "served (a failover takes a few seconds), and that the URL and credentials "
                    "are right",
                    public=_UNREACHABLE.format("Redis Cluster"),
                ) from exc
            raise StoreUnavailableError(
                f"Redis at {self._where} is unavailable ({exc}); check that the server is running "
                "and reachable and that the URL and credentials are right",
                public=_UNREACHABLE.format("Redis"),
            ) from exc

    @asynccontextmanager
    async def commands(self) -> AsyncIterator[Any]:
        """The Redis client, for the layers above that send their own commands, within a turn of
        the store's gate and its error mapping: they too count against ``max_connections``, wait
        for a turn instead of opening more connections, and see a lost server as
        :class:`StoreUnavailableError`. Prefer :meth:`run_script` and :meth:`call`, which also
        wait out a migrating slot on a cluster."""
        async with self._turn():
            with self._guard():
                yield self._client

    def register_script(self, source: str) -> Any:
        """A Lua script registered on this store's client (run it with :meth:`run_script`)."""
        return self._client.register_script(source)

    async def _moving(self, call: Callable[[], Awaitable[_T]]) -> _T:
        """``await call()``; on a cluster, again while its slot migrates (up to
        ``migration_timeout``; :func:`._redis_cluster.through_migration`)."""
        if not self.cluster:
            return await call()
        return await cluster.through_migration(self._redis, call, self.migration_timeout)

    async def _pipelined(self, build: Callable[[Any], object]) -> list[Any]:
        """One non-transactional pipeline of the commands ``build(pipe)`` queues, retried whole
        while a slot migrates: only for idempotent commands (reads, a registry ``ZADD``)."""

        async def run() -> list[Any]:
            async with self._client.pipeline(transaction=False) as pipe:
                build(pipe)
                return cast(list[Any], await pipe.execute())

        return await self._moving(run)

    async def run_script(self, script: Any, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run a script of :meth:`register_script` in a turn of the gate, with the store's error
        mapping, and retried while its slot migrates. ``keys`` must name every key it touches."""
        async with self._turn():
            with self._guard():
                return await self._moving(lambda: script(keys=keys, args=args))

    async def call(self, command: Callable[[Any], Awaitable[_T]]) -> _T:
        """``await command(client)`` as :meth:`run_script` runs a script (for the layers above
        that send commands of their own: one command, or a pipeline of one slot)."""
        async with self._turn():
            with self._guard():
                return await self._moving(lambda: command(self._client))

    def redis_name(self, key: Key, kind: str = "") -> str:
        """THE Redis name of ``key`` (``kind`` names a companion: ``:idx``, ``:stream``, ...).

        Every name with the same key-registry group shares one cluster slot (module docs)."""
        return self._name_encoded([encode_segment(s) for s in key], kind)

    def _name_encoded(self, enc: list[str], kind: str = "") -> str:
        """The Redis name of a key given as its escaped segments."""
        t = self.hash_tag_segments
        if self.cluster:
            return cluster.cluster_name(self.namespace, enc, kind, t)
        tail = "".join("/" + e for e in enc[t:])
        return f"{self.namespace}:{{{'/'.join(enc[:t])}}}{tail}{kind}"

    def _index(self, prefix: Key) -> str:
        return self.redis_name(prefix, ":idx") if prefix else f"{self.namespace}::idx"

    def _index_depth(self, enc: list[str]) -> int:
        """The shortest proper prefix of a key (escaped) whose index its scripts maintain: 0 on one
        server; on a cluster its tag prefix (shorter ones use tag registries)."""
        return cluster.tag_length(enc, self.hash_tag_segments)[0] if self.cluster else 0

    def _names_of(self, key: Key) -> tuple[str, list[str], list[str]]:
        """``key``'s entry name, the index keys of its proper prefixes and its member in each.

        From the cache when known; otherwise every segment is escaped once and the names are
        joined from the escaped segments. ``key`` must already be validated.
        """
        names = self._names.get(key)
        if names is None:
            if len(self._names) >= _NAME_CACHE_SIZE:
                self._names.clear()  # cheap and rare: a working set larger than the cache
            enc = [encode_segment(s) for s in key]
            first = self._index_depth(enc)
            indexes = [f"{self.namespace}::idx"] if first == 0 else []
            indexes += [self._name_encoded(enc[:d], ":idx") for d in range(max(first, 1), len(enc))]
            members = ["/".join(enc[d:]) for d in range(first, len(enc))]
            names = self._names[key] = (self._name_encoded(enc), indexes, members)
        return names

    def _stream_names(self, stream: Key) -> tuple[str, str]:
        """``stream``'s Redis stream and counter names, from the cache when known."""
        names = self._streams.get(stream)
        if names is None:
            if len(self._streams) >= _NAME_CACHE_SIZE:
                self._streams.clear()
            names = self._streams[stream] = (
                self.redis_name(stream, ":stream"),
                self.redis_name(stream, ":seq"),
            )
        return names

    @staticmethod
    def _valid(key: Key, known: dict[Key, Any], what: str) -> Key:
        """``key`` validated; a key in the cache ``known`` was validated when it was added."""
        if type(key) is tuple:
            try:
                if key in known:
                    return key
            except TypeError:  # an unhashable segment: validate_key says what is wrong
                pass
        return validate_key(key, what)

    async def setup(self) -> None:
        """Check that the server answers and load the scripts (one round trip); on a cluster,
        discover its nodes and load the scripts on every primary (a promoted replica loads them
        on first use: EVALSHA falls back to SCRIPT LOAD on NOSCRIPT)."""
        if self.cluster:
            await self._discover_cluster()
        await self.load_scripts(_SCRIPTS, ping=True)

    async def _discover_cluster(self) -> None:
        """Read the cluster's slot map. A node that refuses connections while a failover is in
        progress makes redis-py's discovery fail; it is retried for up to
        ``cluster_setup_timeout`` seconds (a failover takes a few), then StoreUnavailableError."""
        deadline = time.monotonic() + self.cluster_setup_timeout
        while True:
            try:
                with self._guard():
                    await self._client.initialize()
                return
            except StoreUnavailableError:
                if time.monotonic() >= deadline:
                    raise
                await anyio.sleep(0.25)

    async def load_scripts(self, scripts: Sequence[str], *, ping: bool = False) -> None:
        """Load ``scripts`` (Lua sources) so that their first EVALSHA needs no NOSCRIPT retry:
        on one server in one pipelined round trip (with a PING when ``ping``); on a cluster on
        every primary that answers (a primary down, a failover in progress, loads them on first
        use instead). StoreUnavailableError when no primary answers. Layers above that run
        scripts of their own (the native board queue) load them through this too."""
        if not self.cluster:
            with self._guard():
                async with self._client.pipeline(transaction=False) as pipe:
                    if ping:
                        pipe.ping()
                    for script in scripts:
                        pipe.script_load(script)
                    await pipe.execute()
            return
        failures: list[StoreUnavailableError] = []
        primaries = self._client.get_primaries()
        for node in primaries:
            try:
                with self._guard():
                    for script in scripts:
                        await self._client.execute_command("SCRIPT LOAD", script, target_nodes=node)
            except StoreUnavailableError as exc:
                failures.append(exc)
                log.warning("Redis Cluster node %s did not load the scripts: %s", node.name, exc)
        if failures and len(failures) == len(primaries):
            raise failures[0]

    async def aclose(self) -> None:
        await self._subscriber.aclose()
        if self._owns_client:
            await self._client.aclose()

    # -- entries ---------------------------------------------------------------------------

    async def get(self, key: Key) -> Entry | None:
        k = self._valid(key, self._names, "key")
        names = self._names.get(k)
        name = names[0] if names is not None else self.redis_name(k)  # a read needs no index names
        async with self._turn():
            with self._guard():
                value, version = await self._moving(lambda: self._client.hmget(name, ["v", "n"]))
        if value is None or version is None:
            return None
        return Entry(cast(bytes, value), int(version))

    async def get_many(self, keys: Sequence[Key]) -> list[Entry | None]:
        """One pipelined ``HMGET`` per key: one round trip (on a cluster, one per node holding
        some of the keys; pass keys of one group, as the board does, for one round trip)."""
        names = []
        for key in keys:
            k = self._valid(key, self._names, "key")
            cached = self._names.get(k)
            names.append(cached[0] if cached is not None else self.redis_name(k))
        if not names:
            return []
        async with self._turn():
            with self._guard():
                rows = await self._pipelined(
                    lambda pipe: [pipe.hmget(n, ["v", "n"]) for n in names]
                )
        return [
            None if value is None or version is None else Entry(cast(bytes, value), int(version))
            for value, version in rows
        ]

    async def put(
        self,
        key: Key,
        value: bytes,
        *,
        expected_version: int | None = None,
        ttl: float | None = None,
        indexed: bool = True,
        fence: Fence | None = None,
    ) -> int:
        k = self._check_put(key, value, expected_version, ttl)
        f = self._check_fence(k, fence)
        name, indexes, members = self._names_of(k)
        if expected_version or not indexed:  # no index to touch: it exists, or is never listed
            indexes, members = [], []
        ttl_ms = "" if ttl is None else str(max(1, math.ceil(ttl * 1000)))
        args: list[bytes | str] = [_expected(expected_version), bytes(value), ttl_ms, *members]
        keys = [name, *indexes]
        if f is not None:
            keys.append(self._fence_name(k, name, f.key))
            args += [bytes(f.value), "1" if f.release else ""]
            script = self._update_fenced if expected_version else self._put_fenced
        else:
            script = self._update if expected_version else self._put
        async with self._turn():
            if self.cluster and indexed and not expected_version:  # it may create the key
                await self._register(k)
            with self._guard():
                ok, found = await self._moving(lambda: script(keys=keys, args=args))
        if ok < 0 and f is not None:
            raise LeaseLostError(k, f.key)
        if not ok:
            raise VersionConflict(k, expected_version, int(found))
        return int(found)

    def _fence_name(self, key: Key, name: str, fence: Key) -> str:
        """The fence key's name; on a cluster it must share the written key's slot."""
        fence_name = self._names_of(fence)[0]
        if self.cluster and self._client.keyslot(fence_name) != self._client.keyslot(name):
            raise ConfigurationError(
                f"the fence key {fence!r} is in another Redis Cluster hash slot than {key!r}; a "
                "fenced write needs both keys in one key-registry group (agentscope_teams.keys)"
            )
        return fence_name

    async def _register(self, key: Key) -> None:
        """Add ``key``'s tag prefix to the tag registries of its short prefixes (cluster only):
        one pipelined round trip, skipped when this store has written those members before."""
        enc = [encode_segment(s) for s in key]
        todo = [
            (reg, member)
            for reg, member, _ in cluster.registrations(self.namespace, enc, self.hash_tag_segments)
            if (reg, member) not in self._registered
        ]
        if not todo:
            return
        with self._guard():
            await self._pipelined(lambda pipe: [pipe.zadd(reg, {m: 0}) for reg, m in todo])
        if len(self._registered) >= 16 * _NAME_CACHE_SIZE:
            self._registered.clear()
        self._registered.update(todo)

    async def delete(
        self, key: Key, *, expected_version: int | None = None, indexed: bool = True
    ) -> bool:
        k = validate_key(key)
        check_expected(expected_version)
        async with self._turn(reserve=not indexed):  # a lease is given back even when busy
            ok, found = await self._delete_script(k, _expected(expected_version), indexed)
        if not ok:
            raise VersionConflict(k, expected_version, int(found))
        return int(found) > 0

    async def _delete_script(
        self, key: Key, expected: str, indexed: bool = True
    ) -> tuple[int, int]:
        name, indexes, members = self._names_of(key)
        if not indexed:
            indexes, members = [], []
        with self._guard():
            ok, found = await self._moving(
                lambda: self._delete(keys=[name, *indexes], args=[expected, *members])
            )
        return int(ok), int(found)

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        self._check_page(limit)
        p = validate_prefix(prefix)
        a = None if after is None else validate_key(after, "after")
        async with self._turn():
            if self.cluster and cluster.is_short(
                [encode_segment(s) for s in p], self.hash_tag_segments
            ):
                return await self._list_registry(p, limit, a)
            return await self._list_index(p, limit, a)

    async def _list_index(self, p: Key, limit: int, after: Key | None) -> list[Key]:
        """Keys below ``p`` from its index (every key below it shares one slot on a cluster)."""
        start = _range_start(encode_prefix(p), None if after is None else encode_key(after))
        prefix_enc = [encode_segment(s) for s in p]
        out: list[Key] = []
        while start is not None and len(out) < limit:
            batch = max(limit - len(out), 32)
            with self._guard():
                raw = await self._moving(
                    partial(self._client.zrangebylex, self._index(p), start, "+", 0, batch)
                )
            members = [cast(bytes, m).decode() for m in raw]
            # Entry names straight from the escaped members: no decode / re-encode round trip.
            names = [self._name_encoded(prefix_enc + m.split("/")) for m in members]
            out.extend(await self._live([p + decode_key(m) for m in members], names))
            start = "(" + members[-1] if len(members) == batch else None
        return out[:limit]

    async def _list_registry(self, p: Key, limit: int, after: Key | None) -> list[Key]:
        """Keys below a short prefix ``p`` (cluster): its tag registry in order, each range member
        listed through its tag's index, single members checked to exist (stale ones skipped)."""
        start, resume = self._registry_start(p, after)
        registry = cluster.registry_name(self.namespace, [encode_segment(s) for s in p])
        out: list[Key] = []
        while start is not None and len(out) < limit:
            batch = max(limit - len(out), 32)
            with self._guard():
                raw = await self._moving(
                    partial(self._client.zrangebylex, registry, start, "+", 0, batch)
                )
            members = [cast(bytes, m).decode() for m in raw]
            singles: list[Key] = []
            for m in members:
                if not m.endswith("/"):
                    singles.append(p + decode_key(m))
                    continue
                out.extend(await self._existing(singles))
                singles = []
                tag = p + decode_key(m[:-1])
                from_ = resume if resume is not None and resume[: len(tag)] == tag else None
                out.extend(await self._list_index(tag, limit - len(out), from_))
                resume = None
                if len(out) >= limit:
                    return out[:limit]
            out.extend(await self._existing(singles))
            start = "(" + members[-1] if len(members) == batch else None
        return out[:limit]

    def _registry_start(self, p: Key, after: Key | None) -> tuple[str | None, Key | None]:
        """Where a registry listing of ``p`` starts after ``after``: the ZRANGEBYLEX start (None:
        nothing can follow) and the key to resume from inside the first range member."""
        if after is None:
            return "-", None
        start = _range_start(encode_prefix(p), encode_key(after))
        if start is None or start == "-":
            return start, None
        enc = [encode_segment(s) for s in after]
        n = cluster.tag_length(enc, self.hash_tag_segments)[0]
        rel = "/".join(enc[len(p) : n])
        return ("[" + rel + "/", after) if len(enc) > n else ("(" + rel, None)

    async def _existing(self, keys: list[Key]) -> list[Key]:
        """The keys (of any slots) whose entries exist: one pipelined EXISTS each."""
        if not keys:
            return []
        with self._guard():
            found = await self._pipelined(
                lambda pipe: [pipe.exists(self.redis_name(k)) for k in keys]
            )
        return [k for k, n in zip(keys, found, strict=True) if n]

    async def _live(self, keys: list[Key], names: list[str]) -> list[Key]:
        """The keys whose entries exist; drops the index members of the others."""
        if not keys:
            return []
        with self._guard():
            exists = await self._moving(lambda: self._exists(keys=names))
        for k, alive in zip(keys, exists, strict=True):
            if not alive:
                await self._delete_script(k, "0")  # a no-op if the key was created meanwhile
        return [k for k, alive in zip(keys, exists, strict=True) if alive]

    # -- streams ---------------------------------------------------------------------------

    async def append(self, stream: Key, value: bytes) -> int:
        k = self._check_append(stream, value)
        names = self._stream_names(k)
        async with self._turn():
            with self._guard():
                seq = await self._moving(
                    lambda: self._append(keys=list(names), args=[bytes(value)])
                )
        return int(seq)

    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]:
        k = self._valid(stream, self._streams, "stream")
        self._check_page(limit, after)
        async with self._turn():
            with self._guard():
                rows = await self._moving(
                    lambda: self._client.xrange(
                        self._stream_names(k)[0], min=f"0-{after + 1}", max="+", count=limit
                    )
                )
        return [
            (
                int(cast(bytes, rid).split(b"-")[1]),
                cast(dict[bytes, bytes], fields)[b"v"],
            )
            for rid, fields in rows or []
        ]

    async def delete_stream(self, stream: Key) -> bool:
        name = self.redis_name(validate_key(stream, "stream"), ":stream")
        async with self._turn():
            with self._guard():
                return bool(await self._moving(lambda: self._client.delete(name)))

    # -- signals ---------------------------------------------------------------------------

    async def signal(self, channel: Key) -> None:
        """``PUBLISH`` on ``channel``: wakes its waiters in every process on this server."""
        name = self.redis_name(validate_key(channel, "channel"), ":signal")
        async with self._turn():
            with self._guard():
                await self._moving(lambda: self._client.publish(name, b"1"))

    async def wait_signal(self, channels: Sequence[Key], timeout: float) -> bool:  # noqa: ASYNC109
        """True when one of ``channels`` is signalled within ``timeout``; False at the timeout or,
        after sleeping it, when the subscriber cannot connect (logged)."""
        names = [self.redis_name(validate_key(c, "channel"), ":signal") for c in channels]
        return await self._subscriber.wait(names, timeout)


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


def _check_pool(max_connections: int, pool_timeout: float) -> None:
    if not isinstance(max_connections, int) or max_connections < 1:
        raise ConfigurationError(f"max_connections must be an int >= 1, got {max_connections!r}")
    if not pool_timeout > 0:
        raise ConfigurationError(f"pool_timeout must be > 0 seconds, got {pool_timeout!r}")


def _client_from_url(redis: Any, url: str, max_connections: int, pool_timeout: float) -> Redis:
    """A client on a plain connection pool; the store's gate bounds its operations.

    The pool itself is unbounded so that it never fails with "Too many connections": the store's
    gate keeps its operations at ``max_connections`` (callers past it wait up to ``pool_timeout``;
    the board queue's own commands take turns too, see :meth:`RedisStore.commands`), and the signal
    subscriber adds one connection. Measured (``python -m bench redis_pool``, 1,000 concurrent
    tasks): a blocking pool of 64, 256 or 1,024 costs the same client CPU, i.e. its
    per-acquisition condition and timeout, not waiting; the gated plain pool avoids that cost.
    Replies are parsed by ``hiredis`` when installed (the ``redis`` extra installs it).
    """
    _check_pool(max_connections, pool_timeout)
    try:
        pool = redis.asyncio.ConnectionPool.from_url(url, socket_connect_timeout=5)
        return cast("Redis", redis.asyncio.Redis.from_pool(pool))
    except ValueError as exc:
        raise ConfigurationError(
            f"invalid Redis URL {redact_url(url)!r} ({redact_text(str(exc), url)}); "
            "use redis://[user:password@]host:port/db"
        ) from exc


def _describe(client: Redis) -> str:
    """A password-free description of where an injected client connects."""
    kw = client.connection_pool.connection_kwargs
    if "path" in kw:
        return f"unix://{kw['path']}"
    return f"redis://{kw.get('host', 'localhost')}:{kw.get('port', 6379)}/{kw.get('db', 0)}"


__all__ = ["RedisStore"]
