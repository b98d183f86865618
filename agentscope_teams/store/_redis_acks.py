"""Writes confirmed by replicas: :class:`~agentscope_teams.store.redis.RedisStore`'s
``replica_acks`` option.

Redis replicates asynchronously: a write the primary acknowledged may not have reached a replica
when the primary dies, and is lost if that replica is promoted. With ``replica_acks=N`` (N >= 1)
every write is followed by ``WAIT N <timeout ms>`` on the same connection, in the same round trip
(a non-transactional pipeline of the write and the WAIT; on a cluster, sent to the connection of
the node that owns the key's slot). WAIT answers how many replicas acknowledged everything the
connection wrote; fewer than N raises :class:`StoreUnavailableError`: the write happened on the
primary but is not known to survive a failover, so a caller treats it as a lost answer.

On a cluster, MOVED re-routes the write (the slot map is patched as redis-py does), ASK sends it
with ``ASKING`` to the target, and TRYAGAIN is raised for the store's migration retries
(:func:`._redis_cluster.through_migration`); a connection error asks the client to refresh its
slot map before the next command.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import ConfigurationError, StoreUnavailableError

#: Seconds a write waits for its replicas by default (``replica_ack_timeout``).
DEFAULT_ACK_TIMEOUT = 1.0
OPTIONS = ("replica_acks", "replica_ack_timeout")


def check(acks: object, timeout: object) -> tuple[int, float]:
    """``(replica_acks, replica_ack_timeout)`` checked; ConfigurationError naming the option."""
    if isinstance(acks, bool) or not isinstance(acks, int) or acks < 0:
        raise ConfigurationError(
            f"replica_acks must be an int >= 0 (replicas that confirm each write), got {acks!r}"
        )
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ConfigurationError(f"replica_ack_timeout must be > 0 seconds, got {timeout!r}")
    return acks, float(timeout)


def check_within(acks: int, timeout: float, client: Any) -> None:
    """ConfigurationError when writes are confirmed (``acks``) and ``timeout`` does not end
    before ``client``'s socket timeout: the ``WAIT`` reply would not be read in time, and the
    store would report the server gone instead of the replicas late."""
    if not acks:
        return
    pool = getattr(client, "connection_pool", None)
    if pool is not None:  # one server: the pool's connections, as they would be made
        read = pool.connection_kwargs.get("socket_timeout") or pool.make_connection().socket_timeout
    else:  # a cluster client: its nodes' connections
        read = getattr(client, "connection_kwargs", {}).get("socket_timeout")
    if read and timeout >= read:
        raise ConfigurationError(
            f"replica_ack_timeout ({timeout:g} s) must be shorter than the connection's "
            f"socket_timeout ({read:g} s): a write waits up to replica_ack_timeout for its "
            "replicas, and a reply not read within socket_timeout drops the connection as if "
            "the server were gone. Lower replica_ack_timeout, or raise socket_timeout (a single "
            "server's URL takes ?socket_timeout=SECONDS)"
        )


def from_url(url: str) -> tuple[str, dict[str, Any]]:
    """``url`` without the ``replica_acks`` / ``replica_ack_timeout`` query options, and those
    options (parsed; ConfigurationError naming one that is not a number)."""
    parts = urlsplit(url)
    if not parts.query:
        return url, {}
    found: dict[str, Any] = {}
    rest = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name not in OPTIONS:
            rest.append((name, value))
            continue
        try:
            found[name] = int(value) if name == "replica_acks" else float(value)
        except ValueError:
            raise ConfigurationError(
                f"the Redis URL's {name} must be a number, got {value!r}; e.g. "
                "?replica_acks=1&replica_ack_timeout=2.5"
            ) from None
    return urlunsplit(parts._replace(query=urlencode(rest))), found


def unconfirmed(where: str, wanted: int, got: int, timeout: float) -> StoreUnavailableError:
    return StoreUnavailableError(
        f"a write to Redis {where} happened on the primary but was not confirmed by "
        f"{wanted} replica(s) within {timeout:g} s (replica_acks={wanted}; {got} confirmed): it "
        "may be lost if the primary fails; treat it as a write whose answer was lost",
        public="the Redis store could not confirm a write on its replicas; retry in a moment",
    )


async def on_server(client: Any, command: Sequence[Any], wait: Sequence[Any]) -> Any:
    """``command`` then ``wait`` (``WAIT n ms``) in one non-transactional pipeline: the write's
    reply and the number of replicas that acknowledged it."""
    async with client.pipeline(transaction=False) as pipe:
        pipe.execute_command(*command)
        pipe.execute_command(*wait)
        reply, acks = await pipe.execute(raise_on_error=False)
    if isinstance(reply, Exception):
        raise reply
    if isinstance(acks, Exception):
        raise acks
    return reply, int(acks)


async def on_cluster(
    client: Any, redis: Any, slot: int, command: Sequence[Any], wait: Sequence[Any]
) -> Any:
    """``command`` then ``wait`` in one pipeline on the connection of the primary that owns
    ``slot``, following MOVED and ASK (module docs): the write's reply and the acknowledgements."""
    from redis.asyncio.cluster import PipelineCommand

    e = redis.exceptions
    asking = None
    for _ in range(client.RedisClusterRequestTTL):
        if client._initialize:  # a refresh an error asked for
            await client.initialize()
        node = asking or client.nodes_manager.get_node_from_slot(slot)
        sent = [*([("ASKING",)] if asking else []), tuple(command), tuple(wait)]
        cmds = [PipelineCommand(i, *args) for i, args in enumerate(sent)]
        try:
            await node.execute_pipeline(cmds)
        except (e.ConnectionError, e.TimeoutError) as exc:
            client._request_refresh(last_failed_node_name=node.name)
            exc.last_failed_node_name = node.name
            raise
        reply, acks = cmds[-2].result, cast(Any, cmds[-1].result)
        asking = None
        if isinstance(reply, e.MovedError | e.AskError) and not reply.host:
            reply.host = node.host  # "MOVED <slot> :<port>": the same host
        if isinstance(reply, e.MovedError):
            await client.nodes_manager.move_slot(reply)
            continue
        if isinstance(reply, e.AskError):
            asking = client.get_node(*client.nodes_manager.remap_host_port(reply.host, reply.port))
            if asking is None:
                raise reply
            continue
        if isinstance(reply, e.ConnectionError | e.TimeoutError | e.ClusterDownError):
            client._request_refresh(last_failed_node_name=node.name)
            reply.last_failed_node_name = node.name
        for found in (reply, acks):
            if isinstance(found, Exception):
                raise found
        return reply, int(acks)
    raise e.ClusterError(  # redis-py's own words for it, and which slot
        f"TTL exhausted: slot {slot} was still redirected after "
        f"{client.RedisClusterRequestTTL} tries; the cluster is resharding or failing over"
    )
