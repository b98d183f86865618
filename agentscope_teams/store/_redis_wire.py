"""The lean path's send-and-read (:mod:`._redis_lean`): one command written to a connection of
redis-py's and its reply read, as ``Connection.send_packed_command`` then ``read_response`` do it,
with less client CPU (issues 26/27).

redis-py's pair runs a socket timeout each (two timers, and an ``asyncio.timeout`` context manager
is two more coroutines and its own object), a health-check test, a coroutine for the write, one for
the read from the parser and the parser's own read. :func:`exchange` writes the packed command with
``writelines``, reads the reply with the connection's ``hiredis`` reader from the connection's
stream, and keeps one deadline (:class:`_Deadline`, one ``loop.call_at``) for both. It is taken
only on a connection :func:`ready` for it (connected, a hiredis parser, no health check due);
otherwise redis-py's own pair runs. Its results are redis-py's (:func:`_failed`): the same reply,
``ResponseError`` raised with the connection kept, a socket timeout a ``TimeoutError`` and any
other failure or a cancellation a disconnect; a RESP3 push message is handled by the parser.
:func:`exchange` with a ``count`` does the same for several commands in one write (riders,
:mod:`._redis_riders`), each ``ResponseError`` returned in its reply's place.
"""

from __future__ import annotations

import asyncio
import builtins
from asyncio import current_task, get_running_loop
from typing import Any

from redis.exceptions import ConnectionError, ResponseError, TimeoutError

_AsyncHiredisParser: Any = None
try:  # redis-py's parts the send-and-read reads (checked by wire_fits)
    from redis._parsers import hiredis as _hiredis_parsers
    from redis._parsers.socket import SERVER_CLOSED_CONNECTION_ERROR
    from redis.asyncio.connection import AbstractConnection, add_debug_log_for_connection_failure
    from redis.utils import is_os_level_timeout

    NOT_ENOUGH_DATA = _hiredis_parsers.NOT_ENOUGH_DATA
    _AsyncHiredisParser = _hiredis_parsers._AsyncHiredisParser
except (ImportError, AttributeError):  # an older redis-py: wire_fits() says no
    pass

_CONNECTION_PARTS = (
    *("_parser", "_reader", "_writer", "_active_read_timeout", "_host_error", "disconnect"),
    *("socket_timeout", "health_check_interval", "next_health_check"),
)
_PARSER_PARTS = (
    *("_reader", "_stream", "_read_size", "_connected", "_hiredis_PushNotificationType"),
    *("handle_push_response", "read_response"),
)
#: The connection's methods whose work :func:`exchange` does: it is taken only while they are
#: redis-py's own.
_SAME_AS_REDIS_PY = ("read_response", "_read_response_from_parser", "_send_packed_command")


def wire_fits(connection_class: type, send_packed_command: Any) -> bool:
    """Whether redis-py has every part :func:`exchange` reads and ``connection_class`` sends and
    reads as redis-py does (its ``send_packed_command`` redis-py's or ``send_packed_command``)."""
    if _AsyncHiredisParser is None:
        return False
    try:
        parser = _AsyncHiredisParser(1024)
    except Exception:  # hiredis is not installed: nothing to read with
        return False
    return (
        all(hasattr(connection_class, part) for part in _CONNECTION_PARTS)
        and all(hasattr(parser, part) for part in _PARSER_PARTS)
        and all(
            getattr(connection_class, m, None) is getattr(AbstractConnection, m)
            for m in _SAME_AS_REDIS_PY
        )
        and getattr(connection_class, "send_packed_command", None)
        in (AbstractConnection.send_packed_command, send_packed_command)
    )


def ready(conn: Any) -> bool:
    """Whether :func:`exchange` may send on ``conn``: connected (redis-py's send connects), its
    replies parsed by hiredis, a socket timeout that is none or positive, and no health check due
    (redis-py's send pings first)."""
    parser, writer, timeout = conn._parser, conn._writer, conn.socket_timeout
    return (
        type(parser) is _AsyncHiredisParser
        and parser._connected
        and writer is not None
        and not writer.transport.is_closing()
        and (timeout is None or timeout > 0)
        and (not conn.health_check_interval or get_running_loop().time() <= conn.next_health_check)
    )


async def exchange(conn: Any, packed: list[bytes], count: int | None = None) -> Any:
    """``conn.send_packed_command(packed)`` then ``conn.read_response()`` on a :func:`ready`
    connection, with redis-py's results (module docs) under one deadline: the write waits only
    when the socket's buffer is full or closing (then it drains as redis-py's does and the read
    gets a socket timeout of its own). ``packed`` is one command, or ``count`` commands (riders,
    :mod:`._redis_riders`): then the ``count`` replies are returned as a list, a ``ResponseError``
    in its reply's place (one command's error does not fail the others)."""
    parser, writer = conn._parser, conn._writer
    deadline = _Deadline(conn.socket_timeout)
    writing = True
    replies: list[Any] = []
    try:
        writer.writelines(packed)
        transport = writer.transport
        if transport.is_closing() or transport.get_write_buffer_size():
            await writer.drain()
            deadline.restart(conn.socket_timeout)
        writing = False
        conn._active_read_timeout = deadline  # a maintenance notification may relax it
        try:
            reader, push = parser._reader, parser._hiredis_PushNotificationType
            for _ in range(count or 1):
                if not parser._connected:  # disconnected meanwhile (the parser's own check)
                    raise ConnectionError(SERVER_CLOSED_CONNECTION_ERROR)
                response: Any = reader.gets()
                while response is NOT_ENOUGH_DATA:
                    data = await parser._stream.read(parser._read_size)
                    if not data:
                        raise ConnectionError(SERVER_CLOSED_CONNECTION_ERROR)
                    reader.feed(data)
                    response = reader.gets()
                if push is not None and isinstance(response, push):  # RESP3: the parser's
                    await parser.handle_push_response(response)
                    response = await parser.read_response()
                if isinstance(response, list):  # an error of the connection (LOADING, ...)
                    if response and isinstance(response[0], ConnectionError):
                        raise response[0]
                elif isinstance(response, ConnectionError):
                    raise response
                replies.append(response)
        finally:
            conn._active_read_timeout = None
    except BaseException as error:
        raise await _failed(conn, deadline.stop(error), writing)  # noqa: B904 (redis-py's chain)
    deadline.stop(None)
    if conn.health_check_interval:
        conn.next_health_check = get_running_loop().time() + conn.health_check_interval
    if count is not None:
        return replies
    if isinstance(response, ResponseError):
        raise response from None
    return response


async def _failed(conn: Any, error: BaseException, writing: bool) -> BaseException:
    """What redis-py's ``send_packed_command`` (``writing``) or ``read_response`` raises for
    ``error``, with ``conn`` disconnected as they disconnect it."""
    raised: BaseException = error
    if writing and isinstance(error, TypeError | AttributeError):  # CPython gh-136234
        if conn._writer is not None and conn._writer.transport.is_closing():
            raised = ConnectionError("Connection closed by the server while writing")
            raised.__cause__ = error
    elif isinstance(error, builtins.TimeoutError) and not is_os_level_timeout(error):
        if writing:
            raised = TimeoutError("Timeout writing to socket")
            raised.__suppress_context__ = True
        else:
            raised = TimeoutError(f"Timeout reading from {conn._host_error()}")
    elif isinstance(error, OSError):
        if not writing:
            raised = ConnectionError(
                f"Error while reading from {conn._host_error()} : {error.args}"
            )
        elif isinstance(error, builtins.TimeoutError):  # the OS's ETIMEDOUT
            raised = ConnectionError(
                f"Error {error.errno} while writing to socket. {error.strerror}."
            )
        else:
            no, msg = ("UNKNOWN", error.args[0]) if len(error.args) == 1 else error.args[:2]
            raised = ConnectionError(f"Error {no} while writing to socket. {msg}.")
        raised.__cause__ = error
    operation = "writing command" if writing else "reading response"
    add_debug_log_for_connection_failure(conn, error, operation)
    await conn.disconnect(nowait=True)
    return raised


class _Deadline:
    """``asyncio.timeout(delay)`` of the current task without its context manager's coroutines:
    one ``loop.call_at`` that cancels the task; :meth:`stop` turns that cancellation into
    ``TimeoutError`` as ``asyncio.timeout`` does (not another cancellation of the task). It has
    ``asyncio.Timeout``'s ``reschedule`` (redis-py relaxes an active read's timeout with it)."""

    __slots__ = ("_cancelling", "_expired", "_handle", "_task")

    def __init__(self, delay: float | None) -> None:
        task: Any = current_task()
        self._task = task
        self._cancelling = task.cancelling()
        self._expired = False
        self._handle: asyncio.Handle | None = None
        if delay is not None:
            loop = get_running_loop()
            self._handle = loop.call_at(loop.time() + delay, self._expire)

    def _expire(self) -> None:
        self._handle = None
        self._expired = True
        self._task.cancel()

    def reschedule(self, when: float | None) -> None:
        """Expire at loop time ``when`` (None: never), as ``asyncio.Timeout.reschedule``."""
        if self._expired:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if when is not None:
            loop = get_running_loop()
            self._handle = (
                loop.call_soon(self._expire)
                if when <= loop.time()
                else loop.call_at(when, self._expire)
            )

    def restart(self, delay: float | None) -> None:
        self.reschedule(None if delay is None else get_running_loop().time() + delay)

    def stop(self, error: Any = None) -> Any:
        """No more expiry; ``error`` as ``asyncio.timeout`` lets it out (its own cancellation
        of the task as ``TimeoutError``)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._expired:
            self._expired = False
            if self._task.uncancel() <= self._cancelling and isinstance(
                error, asyncio.CancelledError
            ):
                timeout = builtins.TimeoutError()
                timeout.__cause__ = error
                return timeout
        return error
