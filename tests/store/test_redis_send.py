"""A Redis command's write is timed by a timer, not by a task (issue 26: framework CPU per call).

redis-py times each write with ``asyncio.wait_for``, which on Python 3.11 runs the write in a task
of its own; the store's connections (built from a URL) time it with ``asyncio.timeout`` instead
(``_redis_client.timer_send``). What a user would notice is unchanged: a write the server does not
take within ``socket_timeout`` fails with redis-py's ``TimeoutError`` and drops the connection.
The server here accepts and never reads, so a large enough write fills the socket buffers.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis
import redis.asyncio as aioredis

from agentscope_teams.store._redis_client import client_from_url, timer_send

BIG = [b"x" * (64 << 20)]  # far past what loopback socket buffers take


@pytest.fixture
async def deaf_server() -> AsyncIterator[int]:
    """A port whose server accepts connections and never reads them (it answers "+OK" to the
    connection's handshake, unread)."""
    held: list[asyncio.StreamWriter] = []

    async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"+OK\r\n" * 8)
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        for writer in held:
            writer.close()
        server.close()


def _connection(cls: type, port: int) -> aioredis.Connection:
    return cls(  # type: ignore[no-any-return]
        host="127.0.0.1", port=port, socket_timeout=0.3, protocol=2
    )


@pytest.mark.parametrize("timed", [True, False], ids=["timer", "redis-py wait_for (control)"])
async def test_a_write_past_the_socket_timeout_fails_and_disconnects(
    deaf_server: int, timed: bool
) -> None:
    cls = timer_send(redis, aioredis.Connection) if timed else aioredis.Connection
    conn = _connection(cls, deaf_server)
    await conn.connect()
    tasks_before = len(asyncio.all_tasks())
    with pytest.raises(redis.exceptions.TimeoutError, match="Timeout writing to socket"):
        await conn.send_packed_command(BIG)
    assert not conn.is_connected
    assert conn.socket_timeout == 0.3  # lifted for the write only
    assert len(asyncio.all_tasks()) == tasks_before


async def test_a_write_starts_no_task_and_keeps_the_timeout(deaf_server: int) -> None:
    """The first write connects (redis-py's own path: the handshake's replies are read under the
    socket timeout); the next one is timed by the timer alone."""
    conn = _connection(timer_send(redis, aioredis.Connection), deaf_server)
    await conn.send_packed_command([b"*1\r\n$4\r\nPING\r\n"])
    assert conn.is_connected
    created: list[object] = []
    loop = asyncio.get_running_loop()
    loop.set_task_factory(
        lambda lp, coro, **kw: created.append(coro) or asyncio.Task(coro, loop=lp, **kw)
    )
    try:
        await conn.send_packed_command([b"*1\r\n$4\r\nPING\r\n"])
    finally:
        loop.set_task_factory(None)
    assert created == []
    assert conn.socket_timeout == 0.3 and conn.is_connected
    await conn.disconnect()


def test_a_store_s_own_client_sends_with_the_timer() -> None:
    client = client_from_url(redis, "redis://127.0.0.1:6379/0", 8, 1.0)
    pool = client.connection_pool
    assert pool.connection_class is timer_send(redis, pool.connection_class)
    assert issubclass(pool.connection_class, aioredis.Connection)
    ssl = client_from_url(redis, "rediss://127.0.0.1:6379/0", 8, 1.0).connection_pool
    assert issubclass(ssl.connection_class, aioredis.SSLConnection)
