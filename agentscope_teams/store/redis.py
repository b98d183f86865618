"""``RedisStore``: the store on Redis via redis-py asyncio; conditional writes are Lua scripts.

The key layout is in :mod:`._redis_names`, the scripts in :mod:`._redis_scripts`, the connection,
gate and setup in :mod:`._redis_conn`, deletes and listings in :mod:`._redis_listing`; this module
holds the store itself, its writes, reads, streams and signals.

**Redis Cluster** (a ``RedisCluster`` client, URL ``redis+cluster://host:port[,host:port...]/``):
keys are tagged by their key-registry group without the family literal, and the scripts only touch
indexes in the key's own slot; prefixes shorter than the tag are listed through tag registries
written outside the scripts. The grouping is the store's ``key_groups``, fixed at construction: by
default the key registry's (:func:`agentscope_teams.keys.slot_groups`, found through the
``agentscope_teams.key_groups`` entry point), so every store lays out the framework's keys alike
whatever was imported first. A command refused while its slot migrates (ASK / TRYAGAIN) is retried
for up to ``migration_timeout`` seconds. See :mod:`._redis_cluster` and ``docs/redis-cluster.md``.

Keys written with ``indexed=False`` (leases) go through the same scripts with no index keys: no
index is touched on create or delete, and ``list_keys`` never shows them. Fenced writes
(``put(fence=...)``) use variants of the put/update scripts that first compare the fence key's value
(``HGET v``) and, on release, ``DEL`` it after the write: one command; a fenced ``delete`` is the
delete script with the same check first (the fence key may be the deleted key: a lease given back). The fence key is passed in
KEYS, so the check is atomic; on Redis Cluster it must hash to the entry's slot (a session's lease
does: same user group), else the put raises ``ConfigurationError``.

Signals (:class:`~.base.Signals`): ``signal(channel)`` is a ``PUBLISH`` on ``<name>:signal`` (the
channel key's name, so it carries the team's hash tag); waiting goes through one shared pub/sub
connection per store (:mod:`._redis_signals`). Set ``signals_enabled = False`` to make callers poll.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..errors import ConfigurationError, LeaseLostError, VersionConflict
from . import _redis_acks as acks
from . import _redis_client as rc
from . import _redis_cluster as cluster
from . import _redis_scripts as lua
from ._redis_client import DEFAULT_MAX_CONNECTIONS, DEFAULT_URL
from ._redis_listing import RedisListing, expected_arg
from ._redis_names import NAME_CACHE_SIZE, KeyNames, valid
from ._redis_signals import Subscriber
from .base import DEFAULT_MAX_VALUE_BYTES, Entry, Fence, Key, check_size, validate_key
from .capabilities import StoreCapabilities
from .redact import redact_url

if TYPE_CHECKING:
    from redis.asyncio import Redis, RedisCluster


class RedisStore(RedisListing):
    """A store on one Redis server or a Redis Cluster, shared by every process and host that can
    reach it.

    ``key_groups`` (literal -> group size) is how a cluster hashes keys together; by default the
    key registry's (see the module docs). A single server ignores it.

    ``replica_acks`` (also ``?replica_acks=N`` in the URL): replicas that must confirm every write
    (``WAIT`` in the write's round trip) within ``replica_ack_timeout`` seconds (``?replica_ack_
    timeout=``), else StoreUnavailableError; 0 (the default): writes are not confirmed and one a
    failed primary acknowledged alone is lost in a failover (:mod:`._redis_acks`).
    """

    shared_across_processes = True
    shared_across_hosts = True

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
        key_groups: Mapping[str, int] | None = None,
        replica_acks: int = 0,
        replica_ack_timeout: float = acks.DEFAULT_ACK_TIMEOUT,
    ) -> None:
        super().__init__(max_value_bytes=max_value_bytes)
        redis = self._redis = rc.load_redis()
        rc.check_options(namespace, hash_tag_segments)
        if url is not None and client is not None:
            raise ConfigurationError("RedisStore takes a url or a client, not both")
        self.namespace, self.hash_tag_segments = namespace, hash_tag_segments
        self._owns_client = client is None
        url, found = acks.from_url(url or DEFAULT_URL) if client is None else (url, {})
        self.replica_acks, self.replica_ack_timeout = acks.check(  # the URL's win
            found.get("replica_acks", replica_acks),
            found.get("replica_ack_timeout", replica_ack_timeout),
        )
        if client is None:
            assert url is not None
            if cluster.is_cluster_url(url):
                rc.check_pool(max_connections, pool_timeout)
                client = cluster.cluster_client(redis, url, max_connections)
            else:
                client = rc.client_from_url(redis, url, max_connections, pool_timeout)
        acks.check_within(self.replica_acks, self.replica_ack_timeout, client)
        self._client = cast(Any, client)
        self.cluster = isinstance(client, redis.asyncio.cluster.RedisCluster)
        self.metrics_backend = "redis_cluster" if self.cluster else "redis"
        self._connect(url, max_connections, pool_timeout)
        if key_groups is None:  # the key registry's grouping; a single server uses none
            key_groups = rc.default_key_groups() if self.cluster else {}
        groups = rc.check_key_groups(key_groups)
        self._naming = KeyNames(namespace, hash_tag_segments, self.cluster, groups)
        self._registered: set[tuple[str, str]] = set()  # range members this store has written
        self._put, self._update = (
            client.register_script(lua.PUT),
            client.register_script(lua.UPDATE),
        )
        self._delete = client.register_script(lua.DELETE)
        self._delete_fenced = client.register_script(lua.DELETE_FENCED)
        self._exists = client.register_script(lua.EXISTS)
        self._append = client.register_script(lua.APPEND)
        self._put_fenced = client.register_script(lua.PUT_FENCED)
        self._update_fenced = client.register_script(lua.UPDATE_FENCED)
        self._update_fields = client.register_script(lua.UPDATE_FIELDS)
        self._update_fields_fenced = client.register_script(lua.UPDATE_FIELDS_FENCED)
        self._create_then_get = client.register_script(lua.CREATE_THEN_GET)
        self._subscriber = Subscriber(client)
        self.signals_enabled = True

    def _connect(self, url: str | None, max_connections: int, pool_timeout: float) -> None:
        """Where the client connects, its gate and the errors that mean the server is gone."""
        redis, client = self._redis, self._client
        if self.cluster:
            self._where = cluster.describe_cluster(client)
            gate = cluster.Gate(max_connections, pool_timeout, f"Redis Cluster {self._where}")
            self._turn = gate.turn
            kwargs = client.get_connection_kwargs()
        else:
            self._where = redact_url(url) if url is not None else rc.describe(client)
            self._turn = rc.no_turn
            if self._owns_client:
                pool = client.connection_pool  # its connections belong to the loop that opened them
                self._turn = cluster.Gate(
                    max_connections, pool_timeout, f"Redis {self._where}", pool.reset
                ).turn
            kwargs = client.connection_pool.connection_kwargs
        if kwargs.get("decode_responses"):
            raise ConfigurationError(
                f"the Redis client for {self._where} has decode_responses=True; RedisStore stores "
                "bytes, so pass a client created with decode_responses=False"
            )
        self._db = int(kwargs.get("db") or 0)
        self._rides = not self.cluster and callable(getattr(client, "execute_many", None))
        # One server that cannot serve writes now: a primary demoted by a failover (READONLY), a
        # replica that lost its primary (MASTERDOWN, when it does not serve stale data).
        e = redis.exceptions
        alone = (e.ReadOnlyError, e.MasterDownError)
        self._errors = (
            e.ConnectionError,
            e.TimeoutError,
            *(cluster.cluster_errors(redis) if self.cluster else alone),
        )

    @property
    def capabilities(self) -> StoreCapabilities:
        """The Redis board queue, signals (unless ``signals_enabled`` is False), fencing,
        listing, field records, round reads on one server; shared by every process and host
        that reaches the server."""
        return StoreCapabilities(
            signals=self.signals_enabled,
            board_queue="redis",
            shared_across_hosts=True,
            field_records=True,
            round_reads=not self.cluster,  # a cluster's pipeline is a round trip per node
            fenced_delete=True,
        )

    @property
    def key_groups(self) -> Mapping[str, int]:
        """The slot grouping this store lays keys out by (literal -> group size; cluster only)."""
        return self._naming.groups

    def redis_name(self, key: Key, kind: str = "") -> str:
        """THE Redis name of ``key`` (``kind`` names a companion: ``:idx``, ``:stream``, ...).

        Every name with the same key-registry group shares one cluster slot (module docs)."""
        return self._naming.name(key, kind)

    # -- entries ---------------------------------------------------------------------------

    async def get(self, key: Key) -> Entry | None:
        name = self._naming.entry(valid(key, self._naming.entries, "key"))
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
            names.append(self._naming.entry(valid(key, self._naming.entries, "key")))
        if not names:
            return []
        async with self._turn():
            with self._guard():
                rows = await self._pipelined(
                    lambda pipe: [pipe.hmget(n, ["v", "n"]) for n in names]
                )
        return [_entry_of(row) for row in rows]

    async def get_many_and_read(
        self, keys: Sequence[Key], pages: Sequence[tuple[Key, int, int]]
    ) -> tuple[list[Entry | None], list[list[tuple[int, bytes]]]]:
        """:meth:`get_many` of ``keys`` and :meth:`read` of each ``(stream, after, limit)`` of
        ``pages``, in one pipeline: one round trip on one server (on a cluster, one per node)."""
        names = [self._naming.entry(valid(key, self._naming.entries, "key")) for key in keys]
        streams = []
        for stream, after, limit in pages:
            k = valid(stream, self._naming.streams, "stream")
            self._check_page(limit, after)
            streams.append((self._naming.stream(k)[0], after, limit))

        def build(pipe: Any) -> None:
            for n in names:
                pipe.hmget(n, ["v", "n"])
            for name, after, limit in streams:
                pipe.xrange(name, min=f"0-{after + 1}", max="+", count=limit)

        async with self._turn():
            with self._guard():
                rows = await self._pipelined(build)
        entries = [_entry_of(row) for row in rows[: len(names)]]
        return entries, [_page_of(r) for r in rows[len(names) :]]

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
        name, indexes, members = self._naming.of(k)
        if expected_version or not indexed:  # no index to touch: it exists, or is never listed
            indexes, members = [], []
        expected, ttl_ms = expected_arg(expected_version), _ttl_ms(ttl)
        args: list[bytes | str] = [expected, bytes(value), ttl_ms, *members]
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
                reply = await self._write(script, keys, args)
        return _written(reply, k, expected_version, f)

    async def create_then_get(
        self, key: Key, value: bytes, *, ttl: float, read: Key
    ) -> tuple[int, Entry | None]:
        """Create the unindexed entry ``key`` and read ``read`` after it: one script call (see
        :func:`~.base.create_then_get`); on a cluster ``read`` must share ``key``'s slot."""
        k = self._check_put(key, value, 0, ttl)
        name = self._naming.entry(k)
        read_name = self._naming.entry(valid(read, self._naming.entries, "key"))
        if self.cluster and self._client.keyslot(read_name) != self._client.keyslot(name):
            raise ConfigurationError(
                f"{read!r} is in another Redis Cluster hash slot than {key!r}; reading it with "
                "the write needs both keys in one key-registry group (agentscope_teams.keys)"
            )
        args: list[bytes | str] = [bytes(value), str(max(1, math.ceil(ttl * 1000)))]
        script = self._create_then_get
        async with self._turn():
            with self._guard():
                row = await self._write(script, [name, read_name], args)
        if not row[0]:
            raise VersionConflict(k, 0, int(row[1]))
        found = None if row[2] is None or row[3] is None else Entry(row[2], int(row[3]))
        return int(row[1]), found

    # -- fields beside a value (FieldRecords) ------------------------------------------------

    async def get_fields(self, key: Key, fields: Sequence[str]) -> list[bytes | None]:
        """The hash fields ``fields`` of ``key``'s entry (None where absent): one ``HMGET``."""
        name = self._naming.entry(valid(key, self._naming.entries, "key"))
        if not fields:
            return []
        async with self._turn():
            with self._guard():
                found = await self._moving(lambda: self._client.hmget(name, list(fields)))
        return cast(list[bytes | None], found)

    async def put_fields(
        self,
        key: Key,
        value: bytes,
        *,
        expected_version: int,
        fields: Sequence[tuple[str, bytes]],
        drop: Sequence[str] = (),
        keep: Sequence[str] = (),
        ttl: float | None = None,
        fence: Fence | None = None,
    ) -> int:
        """A CAS ``put`` of an existing entry that also sets ``fields`` and deletes ``drop``
        (hash fields of the entry), if the fields ``keep`` exist: one script call
        (:class:`~.base.FieldRecords`)."""
        if expected_version < 1:
            raise ValueError("put_fields rewrites an existing entry: expected_version must be >= 1")
        k = self._check_put(key, value, expected_version, ttl)
        for field, data in fields:
            if field in ("v", "n"):
                raise ValueError(f"field name {field!r} is the entry's own; choose another")
            check_size(k, data, self.max_value_bytes)
        f = self._check_fence(k, fence)
        name = self._naming.entry(k)
        args: list[bytes | str] = [str(expected_version), bytes(value), _ttl_ms(ttl)]
        args += [str(len(fields)), str(len(keep)), *keep]
        for field, data in fields:
            args += [field, bytes(data)]
        args += list(drop)
        keys = [name]
        script = self._update_fields
        if f is not None:
            keys.append(self._fence_name(k, name, f.key))
            args += [bytes(f.value), "1" if f.release else ""]
            script = self._update_fields_fenced
        async with self._turn():
            with self._guard():
                reply = await self._write(script, keys, args)
        return _written(reply, k, expected_version, f)

    async def _register(self, key: Key) -> None:
        """Add ``key``'s tag prefix to the tag registries of its short prefixes (cluster only):
        one pipelined round trip (with ``replica_acks``, one confirmed ``ZADD`` per registry),
        skipped when this store has written those members before."""
        todo = [r for r in self._naming.registrations(key) if r not in self._registered]
        if not todo:
            return
        with self._guard():
            if self.replica_acks:  # a confirmed ZADD each: the registries are in other slots
                for reg, m in todo:
                    await self._command(("ZADD", reg, 0, m), reg)
            else:
                await self._pipelined(lambda pipe: [pipe.zadd(reg, {m: 0}) for reg, m in todo])
        if len(self._registered) >= 16 * NAME_CACHE_SIZE:
            self._registered.clear()
        self._registered.update(todo)

    # -- streams ---------------------------------------------------------------------------

    async def append(self, stream: Key, value: bytes) -> int:
        k = self._check_append(stream, value)
        names = self._naming.stream(k)
        async with self._turn():
            with self._guard():
                seq = await self._write(self._append, list(names), [bytes(value)])
        return int(seq)

    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]:
        k = valid(stream, self._naming.streams, "stream")
        self._check_page(limit, after)
        async with self._turn():
            with self._guard():
                rows = await self._moving(
                    lambda: self._client.xrange(
                        self._naming.stream(k)[0], min=f"0-{after + 1}", max="+", count=limit
                    )
                )
        return _page_of(rows)

    async def delete_stream(self, stream: Key) -> bool:
        name = self.redis_name(validate_key(stream, "stream"), ":stream")
        return bool(await self.write_command(("DEL", name), name))

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


__all__ = ["RedisStore"]


def _ttl_ms(ttl: float | None) -> str:
    """The scripts' ttl argument: whole milliseconds, at least one; '' for none."""
    return "" if ttl is None else str(max(1, math.ceil(ttl * 1000)))


def _written(reply: Any, key: Key, expected: int | None, fence: Fence | None) -> int:
    """The new version of a write script's ``{ok, version}`` reply, or the error it reports: a
    lost lease (``ok`` < 0, fenced writes) or a version conflict (``ok`` == 0)."""
    ok, found = reply
    if ok < 0 and fence is not None:
        raise LeaseLostError(key, fence.key)
    if not ok:
        raise VersionConflict(key, expected, int(found))
    return int(found)


def _entry_of(row: Any) -> Entry | None:
    """The entry of an ``HMGET name v n`` reply (None: no entry)."""
    value, version = row
    return None if value is None or version is None else Entry(cast(bytes, value), int(version))


def _page_of(rows: Any) -> list[tuple[int, bytes]]:
    """The ``(seq, value)`` rows of an ``XRANGE`` reply of a stream's entries ``0-<seq>``."""
    return [
        (int(cast(bytes, rid).split(b"-")[1]), cast(dict[bytes, bytes], fields)[b"v"])
        for rid, fields in rows or []
    ]
