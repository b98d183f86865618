"""The connection side of :class:`~agentscope_teams.store.redis.RedisStore`: its error mapping,
its gate (at most ``max_connections`` operations at once), retries while a cluster slot migrates,
setup (PING, script loading, cluster discovery) and the client for the layers above.

A store built from a URL lets at most ``max_connections`` operations run at once per event loop (a
semaphore gate, as on a cluster): more wait up to ``pool_timeout`` seconds for a turn instead of
failing with "Too many connections". Behind the gate is a plain connection pool: redis-py's
blocking pool costs a lock, a condition and a timeout timer per acquisition even when a connection
is free (about 28% of client CPU at 1,000 concurrent operations, ``python -m bench redis_pool``);
the gate takes a free turn without a timer.

A write script (``_write``) also carries the riders queued in its context for this store
(:mod:`._redis_riders`: :meth:`RedisConnection.ride`, :meth:`~RedisConnection.land`,
:meth:`~RedisConnection.drop`), in the same socket write, on one server without ``replica_acks``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar, cast

import anyio

from ..errors import StoreUnavailableError
from . import _redis_acks as acks
from . import _redis_cluster as cluster
from . import _redis_pack as pack
from . import _redis_riders as rides
from . import _redis_scripts as lua
from ._redis_client import UNREACHABLE, db_refused
from ._redis_names import KeyNames
from ._redis_signals import Subscriber
from .base import StoreBackend

log = logging.getLogger(__name__)
_T = TypeVar("_T")


class _Guard:
    """The error mapping of :meth:`RedisConnection._guard` (stateless: one per store)."""

    __slots__ = ("_conn",)

    def __init__(self, conn: RedisConnection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        return None

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: Any) -> None:
        if e is not None and isinstance(e, self._conn._errors):
            raise self._conn._unavailable(e) from e


class RedisConnection(StoreBackend):
    """The base of :class:`~agentscope_teams.store.redis.RedisStore` that talks to the server."""

    #: How long ``setup()`` retries reading a cluster's slot map while a node is down.
    cluster_setup_timeout = 15.0
    #: How long a command refused while its slot migrates (ASK / TRYAGAIN) is retried.
    migration_timeout = 30.0

    _client: Any
    _redis: Any
    _owns_client: bool
    _where: str
    #: The database number the client selects (0 on a cluster).
    _db: int
    _turn: Any
    _errors: tuple[type[Exception], ...]
    #: Whether write scripts carry riders (:mod:`._redis_riders`): one server, the lean client.
    _rides: bool = False
    _subscriber: Subscriber
    _naming: KeyNames
    #: True on Redis Cluster: keys are tagged by their key-registry group.
    cluster: bool
    #: Replicas that must confirm each write (0: none; :mod:`._redis_acks`), and how long to wait.
    replica_acks: int = 0
    replica_ack_timeout: float = acks.DEFAULT_ACK_TIMEOUT

    @property
    def client(self) -> Any:
        """The redis-py client (``Redis`` or ``RedisCluster``). Commands sent on it bypass the
        store's gate and error mapping: prefer :meth:`commands`, :meth:`call`, :meth:`run_script`."""
        return self._client

    @property
    def response_error(self) -> type[Exception]:
        """redis-py's ``ResponseError`` (the server's error reply to a command), for the layers
        above, which do not import redis."""
        return cast(type[Exception], self._redis.exceptions.ResponseError)

    def _guard(self) -> _Guard:
        """``with self._guard():`` maps the client's connection errors to
        :class:`StoreUnavailableError` (one object per store, no generator per command)."""
        guard: _Guard | None = self.__dict__.get("_guard_cm")
        if guard is None:
            guard = self.__dict__["_guard_cm"] = _Guard(self)
        return guard

    def _unavailable(self, exc: BaseException) -> StoreUnavailableError:
        if self.cluster:
            node = cluster.node_of(exc)
            at = f" (node {node})" if node else ""
            return StoreUnavailableError(
                f"Redis Cluster {self._where}{at} is unavailable ({type(exc).__name__}: "
                f"{exc}); check that its nodes are running and reachable, that every slot is "
                "served (a failover takes a few seconds), and that the URL and credentials "
                "are right",
                public=UNREACHABLE.format("Redis Cluster"),
            )
        return StoreUnavailableError(
            f"Redis at {self._where} is unavailable ({exc}); check that the server is running "
            "and reachable and that the URL and credentials are right",
            public=UNREACHABLE.format("Redis"),
        )

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

    async def _write(self, script: Any, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run the write script ``script`` (retried while its slot migrates); with
        ``replica_acks``, followed by ``WAIT`` in the same round trip (:meth:`_acked`). Without
        it, the write carries this context's riders (:meth:`_with_riders`)."""
        if not self.replica_acks:
            riders = self._rides and rides.take(self)
            if riders:
                return await self._with_riders(script, keys, args, riders)
            return await self._moving(lambda: script(keys=keys, args=args))
        command = ("EVALSHA", script.sha, len(keys), *keys, *args)
        return await self._moving(lambda: self._acked(command, keys[0], script.script))

    async def _with_riders(
        self, script: Any, keys: Sequence[str], args: Sequence[Any], riders: list[rides.Rider]
    ) -> Any:
        """The write script's reply, sent after ``riders`` in one pipeline (:mod:`._redis_riders`):
        each rider gets its own reply or error; a script the server lacks (``NOSCRIPT``, a lost
        function library: ``script.missing``) is loaded and its command sent again, alone, once
        every other rider has its reply (cut short there, those not sent again yet are queued
        again: the server did not run them); a failure of the round trip fails the riders too
        (``lost``). ``script`` is a :class:`~._redis_lean.LeanScript` or has its ``command`` and
        ``missing``."""
        command = script.command(keys, args)
        try:
            replies = await self._client.execute_many([*riders, command])
        except BaseException as exc:
            error = self._unavailable(exc) if isinstance(exc, self._errors) else exc
            for rider in riders:
                rider.fail(error, lost=True)
            raise
        own = replies.pop()
        missing: list[rides.Rider] = []
        for rider, reply in zip(riders, replies, strict=True):
            if not isinstance(reply, Exception):
                rider.answer(reply)
            elif rider.script.missing(reply):
                missing.append(rider)
            else:
                rider.fail(reply)
        for i, rider in enumerate(missing):
            try:
                await self._alone(rider, in_turn=True)
            except BaseException:
                for unsent in missing[i + 1 :]:
                    unsent.back()
                raise
        if not isinstance(own, Exception):
            return own
        if script.missing(own):
            return await script(keys=keys, args=args)  # loads it, runs it again
        raise own

    def open_rides(self) -> Any:
        """Start a riding block in this context (:mod:`._redis_riders`; None: riders do not
        apply here); end it with :meth:`close_rides`."""
        if not self._rides or self.replica_acks:
            return None
        return rides.open_rides()

    def close_rides(self, token: Any) -> None:
        rides.close_rides(token)

    def ride(self, script: Any, keys: Sequence[str], args: Sequence[Any]) -> rides.Rider | None:
        """Queue the write script ``script`` to ride this context's next write to this store
        (:mod:`._redis_riders`); None when riders do not apply (a cluster, ``replica_acks``, a
        client of its own, no riding block): then run it with :meth:`run_script`. Its reply:
        :meth:`land`."""
        if not self._rides or self.replica_acks:
            return None
        return rides.queue(self, script, keys, args)

    def template(
        self, script: Any, keys: Sequence[str], args: Sequence[Any], slots: tuple[int, ...]
    ) -> pack.Template | None:
        """The command of ``script`` on ``keys`` and ``args`` packed once, to ride with other values
        at ``slots`` (indexes into ``args``) through :meth:`ride_packed` (:mod:`._redis_pack`);
        None when its arguments are not all packed there (then :meth:`ride` it)."""
        if not callable(getattr(script, "command", None)):
            return None
        return pack.template(script, keys, args, slots)

    def ride_packed(self, template: pack.Template, values: tuple[Any, ...]) -> rides.Rider | None:
        """:meth:`ride` of ``template``'s command with ``values`` at its slots (None: riders do
        not apply, or a value is not packed there: then :meth:`ride` or run it)."""
        if not self._rides or self.replica_acks:
            return None
        return rides.queue_packed(self, template, values)

    async def land(self, rider: rides.Rider) -> Any:
        """``rider``'s reply (its error raised): sent alone now, in a turn of the gate, if no
        round trip took it yet, else awaited."""
        if rider.leave():
            await self._alone(rider)
        if rider.done():
            return rider.result()
        return await rider.future

    def drop(self, rider: rides.Rider) -> bool:
        """Take ``rider`` off its queue unsent (True); False: it was sent (:meth:`land`)."""
        if not rider.leave():
            return False
        rider.fail(StoreUnavailableError("a riding Redis command was dropped unsent"))
        return True

    async def _alone(self, rider: rides.Rider, in_turn: bool = False) -> None:
        """Send ``rider`` by itself (``in_turn``: within the turn of the carrier that found
        ``NOSCRIPT``); its reply or error goes to its future (a cancellation is raised too)."""
        script, keys, args = rider.script, rider.keys, rider.arguments()
        try:
            if in_turn:
                reply = await script(keys=keys, args=args)  # loads it on NOSCRIPT
            else:
                reply = await self.run_script(script, keys, args)
        except BaseException as exc:
            error = self._unavailable(exc) if isinstance(exc, self._errors) else exc
            rider.fail(error, lost=not isinstance(exc, self._redis.exceptions.ResponseError))
            if not isinstance(exc, Exception):
                raise
            return
        rider.answer(reply)

    async def _acked(self, command: Sequence[Any], key: str, source: str | None = None) -> Any:
        """The reply of the write ``command`` (on ``key``'s slot) sent with ``WAIT`` on the same
        connection in one round trip; StoreUnavailableError when fewer than ``replica_acks``
        replicas confirm it. ``source``: the script an ``EVALSHA`` runs, loaded on NOSCRIPT."""
        wanted, timeout = self.replica_acks, self.replica_ack_timeout
        wait = ("WAIT", wanted, max(1, round(timeout * 1000)))
        client, redis = self._client, self._redis
        while True:
            try:
                if self.cluster:
                    slot = client.keyslot(key)
                    reply, got = await acks.on_cluster(client, redis, slot, command, wait)
                else:
                    reply, got = await acks.on_server(client, command, wait)
            except redis.exceptions.NoScriptError:
                if source is None:
                    raise
                await client.script_load(source)
                source = None  # loaded: a second NOSCRIPT is an error
                continue
            if got < wanted:
                raise acks.unconfirmed(self._where, wanted, got, timeout)
            return reply

    async def _pipelined(self, build: Callable[[Any], object]) -> list[Any]:
        """One non-transactional pipeline of the commands ``build(pipe)`` queues, retried whole
        while a slot migrates: only for idempotent commands (reads, a registry ``ZADD``)."""

        async def run() -> list[Any]:
            async with self._client.pipeline(transaction=False) as pipe:
                build(pipe)
                return cast(list[Any], await pipe.execute())

        return await self._moving(run)

    async def run_script(
        self, script: Any, keys: Sequence[str], args: Sequence[Any], *, writes: bool = True
    ) -> Any:
        """Run a script of :meth:`register_script` in a turn of the gate, with the store's error
        mapping, and retried while its slot migrates. ``keys`` must name every key it touches.
        A script that ``writes`` is confirmed by ``replica_acks`` replicas (:meth:`_write`)."""
        async with self._turn():
            with self._guard():
                if not writes:
                    return await self._moving(lambda: script(keys=keys, args=args))
                return await self._write(script, keys, args)

    async def call(self, command: Callable[[Any], Awaitable[_T]]) -> _T:
        """``await command(client)`` as :meth:`run_script` runs a script (for the layers above
        that send commands of their own: one command, or a pipeline of one slot). Not confirmed
        by ``replica_acks`` replicas: send writes through :meth:`write_command` or a script."""
        async with self._turn():
            with self._guard():
                return await self._moving(lambda: command(self._client))

    async def write_command(self, command: Sequence[Any], key: str) -> Any:
        """The reply of the write ``command`` (one command, its keys in ``key``'s slot, e.g.
        ``("ZADD", name, score, member)``), sent as :meth:`call` sends one and confirmed by
        ``replica_acks`` replicas as the store's own writes are."""
        async with self._turn():
            with self._guard():
                return await self._command(command, key)

    async def _command(self, command: Sequence[Any], key: str) -> Any:
        """``command`` (on ``key``'s slot) retried while its slot migrates; with
        ``replica_acks``, followed by ``WAIT`` in the same round trip (:meth:`_acked`)."""
        if self.replica_acks:
            return await self._moving(lambda: self._acked(command, key))
        return await self._moving(lambda: self._client.execute_command(*command))

    async def setup(self) -> None:
        """Check that the server answers and load the scripts (one round trip); on a cluster,
        discover its nodes and load the scripts on every primary (a promoted replica loads them
        on first use: EVALSHA falls back to SCRIPT LOAD on NOSCRIPT)."""
        if self.cluster:
            await self._discover_cluster()
        await self.load_scripts(lua.SCRIPTS, ping=True)

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
            try:
                with self._guard():
                    async with self._client.pipeline(transaction=False) as pipe:
                        if ping:
                            pipe.ping()
                        for script in scripts:
                            pipe.script_load(script)
                        await pipe.execute()
            except self._redis.exceptions.ResponseError as exc:
                if self._db and ping:  # the connection's SELECT of the URL's database failed
                    raise db_refused(self._where, self._db, exc) from exc
                raise
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
        await super().aclose()
        await self._subscriber.aclose()
        if self._owns_client:
            await self._client.aclose()
