"""Redis Cluster pieces of :class:`~agentscope_teams.store.redis.RedisStore`: hash tags, the
``redis+cluster://`` URL, the waiting connection gate and the node an error came from.

**Hash tags** (cluster mode only; a single server keeps its layout). A key whose first segment is
a key-registry literal (the store is given each literal's group size ``G`` at construction, its
``key_groups``: :func:`agentscope_teams.keys.slot_groups` by default) and that has at least ``G``
segments is tagged with segments ``1 .. G-1``:
its group *without* the literal, so a session and its lease, or a user's sessions and runs, share
one slot, and a team's records, indexes, streams, signals and member leases share the team's slot.
Its name is ``N:<literal>{<s1/../sG-1>}/<rest>``. A key of a registry literal shorter than its
group is its own tag (``N:{<whole key>}``). Any other key (arbitrary keys) is tagged with its first
``hash_tag_segments`` segments and named as on a single server: ``N:{<s1/../sT>}/<rest>``. The *tag prefix* of a key is the part of it
its tag covers (``key[:G]`` or ``key[:T]``; the whole key when it is shorter).

**Listings.** A prefix at least as long as its keys' tag prefix has an index in their slot,
maintained atomically by the put/delete scripts. A shorter prefix (the empty one, a literal, a user
above their teams) has a *tag registry* instead: a sorted set ``N:{<prefix>}:tags`` (``N::tags`` for
the empty prefix) with one member per tag prefix below it: ``<rel>`` for a key that is its own tag
prefix, ``<rel>/`` for the keys strictly below a tag prefix (listed through that tag's index).
These members sort exactly as the keys they stand for, so a listing walks the registry in order.
The registry is written in a separate command *before* the entry's script (a crash in between
leaves a member without a key, which listings skip), and never inside a cross-slot script.
Members are not removed when keys are deleted: listings skip the stale ones.

**A slot on the move.** While a slot migrates, Redis answers ASK (the key is on the target) or
TRYAGAIN (a multi-key command whose keys are split between the nodes) for the commands it will not
run; redis-py follows an ASK and retries a TRYAGAIN a few times, then raises. Either way the command
did not run, so :func:`through_migration` runs it again with a bounded backoff until the slot
settles (or raises after its timeout). Every script declares every key it touches, so Redis routes
it, and refuses it, by all of them (``docs/redis-cluster.md``, "Slot migration").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

from ..errors import ConfigurationError, StoreBusyError

_T = TypeVar("_T")
#: The first and the longest pause between two tries of a command refused while its slot moves.
MOVING_BACKOFF = (0.005, 0.2)

CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")


def tag_length(
    enc: Sequence[str], tag_segments: int, groups: Mapping[str, int]
) -> tuple[int, bool]:
    """How many leading segments of a key (escaped) its tag covers, and whether it is a registry
    key (tagged without its literal). ``groups``: the group size of each registry literal."""
    size = groups.get(enc[0])
    if size is None:
        return min(len(enc), tag_segments), False
    if len(enc) >= size:
        return size, True
    return len(enc), False  # a registry literal's key shorter than its group: its own tag


def cluster_name(
    namespace: str, enc: Sequence[str], kind: str, tag_segments: int, groups: Mapping[str, int]
) -> str:
    """The Redis name of a key or prefix of at least its tag's length, given escaped segments."""
    n, registry = tag_length(enc, tag_segments, groups)
    tail = "".join("/" + e for e in enc[n:])
    if registry:
        return f"{namespace}:{enc[0]}{{{'/'.join(enc[1:n])}}}{tail}{kind}"
    return f"{namespace}:{{{'/'.join(enc[:n])}}}{tail}{kind}"


def is_short(enc_prefix: Sequence[str], tag_segments: int, groups: Mapping[str, int]) -> bool:
    """Whether a prefix is shorter than the tag prefix of the keys below it (listed through a tag
    registry, not an index)."""
    if not enc_prefix:
        return True
    size = groups.get(enc_prefix[0])
    return len(enc_prefix) < (size if size is not None else tag_segments)


def registry_name(namespace: str, enc_prefix: Sequence[str]) -> str:
    """The tag registry of a short prefix."""
    return f"{namespace}:{{{'/'.join(enc_prefix)}}}:tags" if enc_prefix else f"{namespace}::tags"


def registrations(
    namespace: str, enc: Sequence[str], tag_segments: int, groups: Mapping[str, int]
) -> list[tuple[str, str, bool]]:
    """(registry, member, is a range member) for every short prefix of a key (escaped segments)."""
    n, _ = tag_length(enc, tag_segments, groups)
    below = len(enc) > n
    return [
        (registry_name(namespace, enc[:d]), "/".join(enc[d:n]) + ("/" if below else ""), below)
        for d in range(n)
    ]


# -- the client ------------------------------------------------------------------------------


def is_cluster_url(url: str) -> bool:
    return url.partition("://")[0].lower() in CLUSTER_SCHEMES


def cluster_client(redis: Any, url: str, max_connections: int) -> Any:
    """A ``RedisCluster`` for ``redis+cluster://[user:password@]host:port[,host:port...]/``.

    Every listed node is a startup node. Each node's pool holds ``max_connections`` plus a few for
    the signal subscriber; the store's :class:`Gate` keeps operations below that, so a full pool
    makes callers wait instead of raising ``MaxConnectionsError``.
    """
    from .redact import redact_url

    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    user, password = parts.username, parts.password
    nodes = []
    for item in netloc.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ConfigurationError(
                f"invalid Redis Cluster URL {redact_url(url)!r}: {item!r} is not host:port; use "
                "redis+cluster://[user:password@]host:port[,host:port...]/"
            )
        nodes.append(redis.asyncio.cluster.ClusterNode(host.strip("[]"), int(port)))
    if parts.query:
        raise ConfigurationError(
            f"invalid Redis Cluster URL {redact_url(url)!r}: it takes no query options, got "
            f"{', '.join(sorted(parse_qs(parts.query, keep_blank_values=True)))}"
        )
    if parts.path not in ("", "/"):
        raise ConfigurationError(
            f"invalid Redis Cluster URL {redact_url(url)!r}: a cluster has only database 0, so "
            "the URL takes no /db path"
        )
    return redis.asyncio.cluster.RedisCluster(
        startup_nodes=nodes,
        username=unquote(user) if user else None,
        password=unquote(password) if password else None,
        ssl=parts.scheme.lower().startswith("rediss"),
        max_connections=max_connections + 4,
        socket_connect_timeout=5,
    )


def describe_cluster(client: Any) -> str:
    """A password-free description of a cluster client: its startup nodes."""
    nodes = getattr(client.nodes_manager, "startup_nodes", {}) or {}
    names = ",".join(sorted(nodes)) or "?"
    return f"redis+cluster://{names}/"


class Gate:
    """At most ``limit`` operations at once per event loop; past it callers wait up to
    ``timeout`` seconds for a turn (then :class:`StoreBusyError`). ``async with gate.turn():``.

    ``turn(reserve=True)`` (an unindexed delete: a lease given back) takes a free turn, else the
    one reserved turn: a call that failed for want of a turn still gives its lease back at once.
    """

    def __init__(
        self, limit: int, timeout: float, where: str, on_new_loop: Callable[[], None] | None = None
    ) -> None:
        self._limit, self._timeout, self._where = limit, timeout, where
        #: Called when a second event loop takes a turn (the client's connections belong to the
        #: first: a script's second ``anyio.run``); the store drops them there.
        self._on_new_loop = on_new_loop
        self._sem: asyncio.Semaphore | None = None
        self._spare: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def turn(self, reserve: bool = False) -> _Turn:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop: a semaphore belongs to one loop
            if self._loop is not None and self._on_new_loop is not None:
                self._on_new_loop()
            self._sem, self._spare = asyncio.Semaphore(self._limit), asyncio.Semaphore(1)
            self._loop = loop
        assert self._sem is not None and self._spare is not None
        if reserve and self._sem.locked():
            return _Turn(self._spare, self)
        return _Turn(self._sem, self)

    def busy(self) -> StoreBusyError:
        return StoreBusyError(
            f"no free connection to {self._where} within {self._timeout} s "
            f"({self._limit} operations in flight); retry, or raise max_connections or "
            "pool_timeout",
            limit=self._limit,
            waited=self._timeout,
            public=f"the Redis store is busy (no free connection within {self._timeout:g} s); "
            "retry in a moment",
        )


class _Turn:
    """One turn of a :class:`Gate` on one of its semaphores."""

    def __init__(self, sem: asyncio.Semaphore, gate: Gate) -> None:
        self._sem, self._gate = sem, gate

    async def __aenter__(self) -> None:
        sem = self._sem
        if not sem.locked():  # the common case: a turn is free, take it without a timer
            await sem.acquire()
            return
        try:  # a deadline on this task, not wait_for: no extra task per waiting caller
            async with asyncio.timeout(self._gate._timeout):
                await sem.acquire()
        except TimeoutError as exc:
            raise self._gate.busy() from exc

    async def __aexit__(self, *exc: object) -> None:
        self._sem.release()


def node_of(exc: BaseException) -> str | None:
    """The cluster node an error came from, when redis-py says."""
    name = getattr(exc, "last_failed_node_name", None)
    if name:
        return str(name)
    host, port = getattr(exc, "host", None), getattr(exc, "port", None)
    if host and port:
        return f"{host}:{port}"
    conn = getattr(exc, "connection", None)
    name = getattr(conn, "name", None)
    return str(name) if name else None


def cluster_errors(redis: Any) -> tuple[type[Exception], ...]:
    """The redis-py errors that mean the cluster (or a node of it) cannot serve now."""
    e = redis.exceptions
    return tuple(
        getattr(e, n)
        for n in (
            "ClusterDownError",
            "TryAgainError",
            "MovedError",
            "AskError",
            "ClusterError",
            "SlotNotCoveredError",
            "MasterDownError",
            "ReadOnlyError",
            "BusyLoadingError",
            "MaxConnectionsError",
            "RedisClusterException",
        )
        if hasattr(e, n)
    )


def slot_moving(redis: Any, exc: BaseException) -> bool:
    """Whether ``exc`` says a command did not run because its slot is migrating: TRYAGAIN, an ASK
    or MOVED redis-py did not follow, or redis-py's "TTL exhausted" (a plain ``ClusterError``,
    raised only after redirects and TRYAGAINs, none of which ran the command)."""
    e = redis.exceptions
    return isinstance(exc, e.TryAgainError | e.AskError) or type(exc) is e.ClusterError


async def through_migration(redis: Any, call: Callable[[], Awaitable[_T]], budget: float) -> _T:
    """``await call()``; while its slot migrates (:func:`slot_moving`), again after a pause that
    doubles from ``MOVING_BACKOFF[0]`` to ``MOVING_BACKOFF[1]``, for up to ``budget`` seconds
    (then the last error is raised). Safe for writes: a refused command did not run."""
    delay, deadline = MOVING_BACKOFF[0], time.monotonic() + budget
    while True:
        try:
            return await call()
        except Exception as exc:
            if not slot_moving(redis, exc) or time.monotonic() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, MOVING_BACKOFF[1])
