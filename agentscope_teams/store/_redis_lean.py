"""The lean command path of a :class:`~agentscope_teams.store.redis.RedisStore` built from a URL:
its script calls (``EVALSHA``) and hot single commands skip the layers of redis-py's
``execute_command`` that do nothing for the store.

redis-py 8's ``execute_command`` takes a connection through the pool's lock, its observability
records and a reconnect-or-check coroutine, retries under a closure, parses through the callback
table and releases through the lock again with two more records and a release event; a registered
script call adds a tuple copy, an import and two type checks per call. Measured (``bench/RESULTS.md``,
h-rfast) that is most of the client CPU of a script call beside the socket write itself.

:class:`LeanRedis` sends a command of :data:`LEAN_COMMANDS` (``EVALSHA``, ``HMGET``, ``PUBLISH``,
``DEL``, ...) that has no response callback and no options (redis-py's ``keys=`` option, which only
client-side caching reads, is allowed) as redis-py does, on the same pool, with:

- a free connection taken from the pool's list directly (no coroutine) when nobody holds the pool's
  lock and it is connected with nothing pending (else the pool's ``get_connection``: connect,
  reconnect a dirty one), and given back directly unless it must reconnect (else ``release``);
- the command packed without redis-py's per-argument encoder (:mod:`._redis_pack`: byte for byte
  as redis-py packs it; a script call repacks only the arguments that changed since its last
  call), written and its reply read by :func:`._redis_wire.exchange` (one timer for
  both, redis-py's results: its socket timeouts, its disconnect on any error or cancellation,
  ``NOSCRIPT`` raised as ``NoScriptError``) or, on a connection it does not take, by the
  connection's own ``send_packed_command`` and ``read_response``;
- the connection's own retry policy, disconnecting after each failure, as ``execute_command``.

What it does not do: redis-py's own OpenTelemetry records (its ``observability`` module, which
this package never enables; the store's ``store_operation_seconds`` are above it, unchanged).
Commands stay observable where they were: every command still goes through the client's
``execute_command`` (a wrapper on it counts what is sent), the lean part is inside it.

:meth:`LeanRedis.execute_many` sends several commands in one write on one connection and reads
their replies (:func:`._redis_wire.exchange` with a count; the riders of :mod:`._redis_riders`): it is not
seen by a wrapper of ``execute_command``.

:class:`LeanScript` is redis-py's ``AsyncScript`` without its per-call work: ``EVALSHA``; on
``NOSCRIPT`` (a restarted or flushed server) ``SCRIPT LOAD`` and ``EVALSHA`` again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError, NoScriptError, ResponseError, TimeoutError

from ._redis_client import _TimerSend
from ._redis_pack import pack as _pack
from ._redis_pack import utf8_strict
from ._redis_wire import _AsyncHiredisParser, exchange, ready, wire_fits

_DIRTY = (ConnectionError, TimeoutError, OSError)
#: The commands that take the lean path (when redis-py has no response callback for them): the
#: store's and its layers' hot single commands. Others (``HIMPORT``'s per-connection state, ...)
#: take redis-py's ``execute_command``.
LEAN_COMMANDS = frozenset(
    {"EVALSHA", "FCALL", "HMGET", "HGET", "PUBLISH", "DEL", "EXISTS", "ZADD", "ZREM", "ZRANGEBYLEX"}
)


#: What the lean path reads of redis-py beside its public API, checked once per pool
#: (:func:`fits`): a redis-py without one of them keeps its own path.
_POOL_PARTS = ("_available_connections", "_in_use_connections", "_lock", "ensure_connection")
_CONNECTION_PARTS = ("should_reconnect", "can_read", "send_packed_command", "read_response")
_RETRY_PARTS = ("_retries", "_is_retryable", "_supported_errors", "call_with_retry")


def fits(pool: ConnectionPool) -> bool:
    """Whether the installed redis-py has every part of ``pool`` the lean path uses (redis-py 8
    has; older releases, which the ``redis`` extra admits, may lack some), and its connections
    send and read as redis-py's do (:func:`._redis_wire.wire_fits`)."""
    conn = pool.connection_class
    retry = pool.connection_kwargs.get("retry") or Retry(NoBackoff(), 0)
    return (
        type(pool) is ConnectionPool
        and all(hasattr(pool, part) for part in _POOL_PARTS)
        and all(hasattr(conn, part) for part in _CONNECTION_PARTS)
        and all(hasattr(retry, part) for part in _RETRY_PARTS)
        and wire_fits(conn, _TimerSend.send_packed_command)
    )


class LeanRedis(Redis):
    """redis-py's asyncio client whose commands without a response callback or options take the
    lean path (module docs); every other command, a pipeline, pub/sub, a client bound to one
    connection or a pool of another class takes redis-py's."""

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        pool = self.connection_pool
        if (
            (options and (len(options) > 1 or "keys" not in options))  # keys=: for caching only
            or args[0] not in LEAN_COMMANDS
            or args[0] in self.response_callbacks
            or self.single_connection_client
            or type(pool) is not ConnectionPool
        ):
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        return await _on_connection(pool, args, None)

    async def execute_many(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """Send ``commands`` in one write on one connection and read their replies (riders,
        :mod:`._redis_riders`; a command with a ``wire`` attribute that is not None, packed ahead
        by a template of :mod:`._redis_pack`, is sent as it is on a UTF-8 connection): a list with each reply, or the ``ResponseError`` of that command
        in its place; any other failure raises for all of them (the connection dropped, the pool's
        retry policy applied as for one command). Not seen by a wrapper of ``execute_command``."""
        return await _on_connection(self.connection_pool, commands, len(commands))  # type: ignore[no-any-return]

    def register_script(self, script: Any) -> Any:
        """A :class:`LeanScript` (redis-py's ``AsyncScript`` for a script given as bytes)."""
        if not isinstance(script, str):
            return super().register_script(script)
        return LeanScript(self, script)


async def _on_connection(pool: Any, sent: Any, count: int | None) -> Any:
    """:func:`_send_read` of ``sent`` on a connection of ``pool`` (an idle one taken without a
    turn of the pool's lock when there is one), with the connection's retry policy applied as
    redis-py applies it (without retries: inline, the connection dropped on a failure it names)."""
    conn = _take_idle(pool) or await _take(pool)
    try:
        retry = conn.retry
        if retry._retries or retry._is_retryable is not None:
            return await retry.call_with_retry(
                lambda: _send_read(conn, sent, count),
                lambda error, failures: conn.disconnect(error=error, failure_count=failures),
                with_failure_count=True,
            )
        try:  # call_with_retry without retries, inline
            if ready(conn):
                return await exchange(conn, _packed(conn, sent, count), count)
            return await _send_read(conn, sent, count)
        except retry._supported_errors as error:
            await conn.disconnect(error=error, failure_count=1)
            raise
    finally:
        if not _give_back_idle(pool, conn):
            await pool.release(conn)


def _packed(conn: Any, sent: Any, count: int | None) -> list[bytes]:
    """One command (``count`` None), or ``count`` commands, packed for one write (a command with
    its ``wire`` packed already by a template of :mod:`._redis_pack`, a rider's, as it is)."""
    if count is None:
        return _pack(conn, sent)
    packed: list[bytes] = []
    if not utf8_strict(conn):  # a packed command is sent as it is only on a UTF-8 connection
        for command in sent:
            packed += _pack(conn, command)
        return packed
    for command in sent:
        wire = getattr(command, "wire", None)
        packed += (wire,) if wire is not None else _pack(conn, command)
    return packed


async def _send_read(conn: Any, sent: Any, count: int | None) -> Any:
    """One command's reply (``count`` None), or the list of ``count`` commands' replies with a
    ``ResponseError`` in its reply's place: :func:`._redis_wire.exchange` on a connection ready
    for it, else redis-py's send and reads."""
    packed = _packed(conn, sent, count)
    if ready(conn):
        return await exchange(conn, packed, count)
    await conn.send_packed_command(packed)
    if count is None:
        return await conn.read_response()
    replies: list[Any] = []
    for _ in range(count):
        try:
            replies.append(await conn.read_response())
        except ResponseError as error:
            replies.append(error)
    return replies


def _take_idle(pool: Any) -> Any:
    """The last free connection of ``pool``, taken, when nobody holds the pool's lock and it is
    connected with nothing pending (``Connection.can_read`` of the hiredis parser, false); else
    None (:func:`_take`)."""
    free = pool._available_connections
    if not free or pool._lock.locked():
        return None
    conn = free[-1]
    parser, writer = conn._parser, conn._writer
    if (
        type(parser) is not _AsyncHiredisParser
        or not parser._connected
        or writer is None
        or conn._reader is None
        or parser._reader.has_data()
    ):
        return None
    stream = parser._stream
    if stream._buffer or stream.at_eof() or stream.exception() is not None:
        return None
    free.pop()
    pool._in_use_connections.add(conn)
    return conn


async def _take(pool: Any) -> Any:
    """A connection of ``pool``, ready to send (``ConnectionPool.get_connection`` without its
    lock round trip and records when one is free, connected and clean)."""
    free = pool._available_connections
    if not free or pool._lock.locked():
        return await pool.get_connection()
    conn = free.pop()
    pool._in_use_connections.add(conn)
    try:
        if conn.is_connected and not await conn.can_read():
            return conn
    except _DIRTY:
        pass  # the pool's check reconnects it
    try:
        await pool.ensure_connection(conn)
    except BaseException:
        await pool.release(conn)
        raise
    return conn


def _give_back_idle(pool: Any, conn: Any) -> bool:
    """``ConnectionPool.release`` without its lock round trip and records (True), unless the
    connection must reconnect or re-authenticate (False: the pool's own release)."""
    in_use = pool._in_use_connections
    if (
        pool._lock.locked()
        or conn.should_reconnect()
        or getattr(conn, "_re_auth_token", None) is not None
        or conn not in in_use
    ):
        return False
    in_use.remove(conn)
    pool._available_connections.append(conn)
    return True


class LeanScript:
    """A Lua script run on ``client`` by ``EVALSHA`` (called as redis-py's ``AsyncScript``:
    ``await script(keys=..., args=...)``); on ``NOSCRIPT`` it loads the script and runs it again.
    :meth:`command` and :meth:`missing` let a pipeline send it (riders, :mod:`._redis_riders`)."""

    __slots__ = ("client", "script", "sha")

    def __init__(self, client: Any, script: str) -> None:
        self.client = client
        self.script = script
        self.sha = hashlib.sha1(script.encode()).hexdigest()

    def command(self, keys: Sequence[Any], args: Sequence[Any]) -> tuple[Any, ...]:
        """The command that runs the script on ``keys`` and ``args``."""
        return ("EVALSHA", self.sha, len(keys), *keys, *args)

    @staticmethod
    def missing(error: BaseException) -> bool:
        """Whether ``error`` (a reply to :meth:`command`) says the server lacks the script: then
        calling the script loads it and runs it again."""
        return isinstance(error, NoScriptError)

    async def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        run = self.client.execute_command
        try:
            return await run("EVALSHA", self.sha, len(keys), *keys, *args)
        except NoScriptError:
            self.sha = await self.client.script_load(self.script)
            return await run("EVALSHA", self.sha, len(keys), *keys, *args)
