"""The lean command path of a store built from a URL (``_redis_lean``, issues 26/27: client CPU per
script call) behaves as redis-py's ``execute_command`` and registered scripts do.

Each behaviour is checked on both paths, on a private ``redis-server`` (started here on a free port,
so ``SCRIPT FLUSH`` touches nothing shared) behind a proxy that can drop a connection or swallow a
command: a store from a URL (lean) and a store on an injected redis-py client (redis-py's path, the
control). Commands are counted by wrapping the client's ``execute_command``, as the round-trip
tests do: the counts are the same on both paths.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import DataError

from agentscope_teams.errors import StoreUnavailableError
from agentscope_teams.store import RedisStore
from agentscope_teams.store._redis_lean import LeanRedis, LeanScript, _pack

from ..backends import unique_namespace

pytestmark = pytest.mark.anyio
KEY = ("t", "s", "a", "b")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A private ``redis-server`` on a free port (no persistence)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    port, workdir = _free_port(), tmp_path_factory.mktemp("lean-redis")
    args = ["--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(workdir)]
    proc = subprocess.Popen([binary, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class Proxy:
    """A TCP proxy to the private server that, while ``mode`` is set, acts on a client chunk
    holding ``EVALSHA``: ``"drop"`` closes both sides, ``"swallow"`` never forwards it."""

    def __init__(self, upstream: int) -> None:
        self.upstream, self.mode, self.acted = upstream, "", 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        back = asyncio.create_task(_pump(up_reader, writer))
        try:
            while chunk := await reader.read(65536):
                if self.mode and b"EVALSHA" in chunk:
                    self.acted += 1
                    if self.mode == "drop":
                        break
                    continue
                up_writer.write(chunk)
                await up_writer.drain()
        except OSError:
            pass
        finally:
            back.cancel()
            up_writer.close()
            writer.close()

    async def aclose(self) -> None:
        assert self._server is not None
        self._server.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except OSError:
        pass


@pytest.fixture
async def proxy(server: int) -> AsyncIterator[Proxy]:
    p = Proxy(server)
    await p.start()
    yield p
    await p.aclose()


@pytest.fixture(params=["lean", "redis-py"])
async def store(request: pytest.FixtureRequest, proxy: Proxy) -> AsyncIterator[RedisStore]:
    """A store through the proxy: built from the URL (lean), or on an injected redis-py client."""
    url = f"redis://127.0.0.1:{proxy.port}/0?socket_timeout=0.3"
    if request.param == "lean":
        s = RedisStore(url, namespace=unique_namespace())
        assert isinstance(s.client, LeanRedis)
    else:
        injected = aioredis.Redis.from_url(url)
        s = RedisStore(client=injected, namespace=unique_namespace())
        assert type(s.client) is aioredis.Redis
    async with s:
        yield s
    if request.param != "lean":
        await injected.aclose()


def _count(client: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    sent: list[str] = []
    inner = client.execute_command

    async def counted(*args: Any, **options: Any) -> Any:
        sent.append(str(args[0]))
        return await inner(*args, **options)

    monkeypatch.setattr(client, "execute_command", counted)
    return sent


async def test_noscript_after_a_script_flush_loads_and_retries(
    store: RedisStore, server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = await store.put(KEY, b"v1")
    admin = aioredis.Redis(port=server)
    assert await admin.script_flush() is True  # the private server's, nothing shared
    await admin.aclose()
    sent = _count(store.client, monkeypatch)
    assert await store.put(KEY, b"v2", expected_version=version) == version + 1
    assert sent == ["EVALSHA", "SCRIPT LOAD", "EVALSHA"]
    sent.clear()
    assert await store.put(KEY, b"v3", expected_version=version + 1) == version + 2
    assert sent == ["EVALSHA"]  # loaded again: no second NOSCRIPT
    entry = await store.get(KEY)
    assert entry is not None and entry.value == b"v3"


async def test_a_connection_dropped_mid_call_is_unavailable_then_a_new_one_is_used(
    store: RedisStore, proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A URL's client has redis-py's default retry policy (no retry): the call fails as the
    store's StoreUnavailableError, the connection is dropped, the next call opens a new one."""
    await store.put(KEY, b"v1")
    sent = _count(store.client, monkeypatch)
    proxy.mode = "drop"
    with pytest.raises(StoreUnavailableError, match="Connection closed by server"):
        await store.put(KEY, b"v2", expected_version=1)
    assert proxy.acted == 1 and sent == ["EVALSHA"]
    pool = store.client.connection_pool
    assert not pool._in_use_connections
    assert not any(c.is_connected for c in pool._available_connections)
    proxy.mode = ""
    assert await store.put(KEY, b"v2", expected_version=1) == 2
    assert sent == ["EVALSHA", "EVALSHA"]


async def test_a_reply_past_the_socket_timeout_is_unavailable(
    store: RedisStore, proxy: Proxy
) -> None:
    await store.put(KEY, b"v1")
    proxy.mode = "swallow"
    with pytest.raises(StoreUnavailableError, match="Timeout reading from"):
        await store.put(KEY, b"v2", expected_version=1)
    assert proxy.acted == 1
    proxy.mode = ""  # the timed-out connection was dropped; the next call opens a new one
    assert await store.put(KEY, b"v2", expected_version=1) == 2
    entry = await store.get(KEY)
    assert entry is not None and entry.value == b"v2"


async def test_a_lean_script_call_is_one_write_and_one_read_on_a_pooled_connection(
    server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What one script call does on the lean path, counted: one ``execute_command``, one packed
    write and one reply read on a connection of the pool, no trip through the pool's own
    ``get_connection``/``release`` once a connection is free, and the connection back in the pool."""
    async with RedisStore(f"redis://127.0.0.1:{server}/0", namespace=unique_namespace()) as store:
        await store.put(KEY, b"v1")  # a connection is open and free
        pool = store.client.connection_pool
        (conn,) = pool._available_connections
        calls: list[str] = []
        for obj, names in (
            (conn, ("send_packed_command", "read_response")),
            (pool, ("get_connection", "release")),
        ):
            for name in names:
                monkeypatch.setattr(obj, name, _recorded(calls, name, getattr(obj, name)))
        sent = _count(store.client, monkeypatch)
        assert await store.put(KEY, b"v2", expected_version=1) == 2
        assert sent == ["EVALSHA"]
        assert calls == ["send_packed_command", "read_response"]
        assert pool._available_connections == [conn] and not pool._in_use_connections
        assert await store.get(KEY) is not None  # a hot single command (HMGET, keys=) too
        assert (
            sent == ["EVALSHA", "HMGET"] and calls == ["send_packed_command", "read_response"] * 2
        )
        calls.clear()  # a command outside LEAN_COMMANDS: redis-py's execute_command, its pool calls
        assert await store.client.execute_command("STRLEN", "absent") == 0
        assert calls[0] == "get_connection" and calls[-1] == "release"
        assert await store.delete(KEY)


def _recorded(calls: list[str], name: str, inner: Any) -> Any:
    async def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return await inner(*args, **kwargs)

    return recorded


async def test_scripts_of_a_store_from_a_url_are_lean_and_injected_clients_keep_redis_py(
    server: int, tmp_path: Path
) -> None:
    async with RedisStore(f"redis://127.0.0.1:{server}/0", namespace=unique_namespace()) as store:
        assert isinstance(store.register_script("return 1"), LeanScript)
        assert await store.run_script(store.register_script("return 1"), [], []) == 1
    client = aioredis.Redis(port=server)
    async with RedisStore(client=client, namespace=unique_namespace()) as store:
        assert not isinstance(store.register_script("return 1"), LeanScript)
    await client.aclose()


@pytest.mark.parametrize(
    "args",
    [
        ("EVALSHA", "a" * 40, 2, "k1", "k\u00e9", b"\x00bytes", "", b"x" * 70_000),
        ("HMGET", "name", "v", "n"),
        ("PUBLISH", "ch", 12, -3),
        ("EVALSHA", "a" * 40, 0, 1.5, 9800000.0, 1e-07, float("inf"), -0.0),
    ],
)
def test_commands_are_packed_byte_for_byte_as_redis_py_packs_them(args: tuple[Any, ...]) -> None:
    conn = aioredis.Connection()
    assert b"".join(_pack(conn, args)) == b"".join(conn.pack_command(*args))


def test_a_rate_limits_float_arguments_take_the_lean_packer() -> None:
    """A usage ``ADMIT`` carries turns per minute as floats (a limit less its margin): they are
    packed without redis-py's per-argument encoder."""
    conn = aioredis.Connection()
    args = ("EVALSHA", "a" * 40, 1, "k", 58.8, 1000, "tenant")
    expected = b"".join(conn.pack_command(*args))

    def refuse(*args: Any) -> None:
        raise AssertionError("redis-py's packer was used")

    conn.pack_command = refuse  # type: ignore[method-assign]
    assert b"".join(_pack(conn, args)) == expected


def test_a_value_redis_py_cannot_encode_is_refused_as_redis_py_refuses_it() -> None:
    conn = aioredis.Connection()
    for bad in (True, None, object()):
        with pytest.raises(DataError):
            _pack(conn, ("EVALSHA", "a" * 40, 0, bad))


def test_a_redis_py_without_a_part_the_lean_path_reads_keeps_its_own_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ``redis`` extra admits redis-py releases older than the one the lean path was written
    against: a client from a URL then uses redis-py's path rather than fail on every command."""
    import redis

    from agentscope_teams.store._redis_client import client_from_url

    url = "redis://127.0.0.1:6379/0"
    assert type(client_from_url(redis, url, 8, 1.0)) is LeanRedis
    monkeypatch.delattr(aioredis.ConnectionPool, "ensure_connection")
    assert type(client_from_url(redis, url, 8, 1.0)) is aioredis.Redis
