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

from ..backends import sent_commands, unique_namespace

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
    holding ``EVALSHA``: ``"drop"`` closes both sides, ``"swallow"`` never forwards it (``"swallow
    once"``: the first only), ``"hold"`` forwards it once ``released`` is set."""

    def __init__(self, upstream: int) -> None:
        self.upstream, self.mode, self.acted = upstream, "", 0
        self.port = 0
        self.released, self._acting = asyncio.Event(), asyncio.Event()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        back = asyncio.create_task(_pump(up_reader, writer))
        ahead: asyncio.Queue[tuple[bytes, bool]] = asyncio.Queue()  # chunks, in order
        forward = asyncio.create_task(self._forward(ahead, up_writer))
        try:
            while chunk := await reader.read(65536):
                held = False
                if self.mode and b"EVALSHA" in chunk:
                    self.acted += 1
                    self._acting.set()
                    if self.mode == "drop":
                        break
                    if self.mode == "swallow once":
                        self.mode = ""
                    held = self.mode == "hold"
                    if not held:
                        continue
                ahead.put_nowait((chunk, held))
        except OSError:
            pass
        finally:
            back.cancel()
            forward.cancel()
            up_writer.close()
            writer.close()

    async def _forward(
        self, ahead: asyncio.Queue[tuple[bytes, bool]], up_writer: asyncio.StreamWriter
    ) -> None:
        """Chunks to the server in order; a held one (and those after it) once released."""
        while True:
            chunk, held = await ahead.get()
            if held:
                await self.released.wait()
            up_writer.write(chunk)
            await up_writer.drain()

    async def aclose(self) -> None:
        assert self._server is not None
        self.released.set()
        self._server.close()

    async def wait_acted(self, n: int) -> None:
        async with asyncio.timeout(10):  # a guard against a hang, not a measure
            while self.acted < n:
                self._acting.clear()
                await self._acting.wait()


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


async def test_noscript_after_a_script_flush_loads_and_retries(
    store: RedisStore, server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = await store.put(KEY, b"v1")
    admin = aioredis.Redis(port=server)
    assert await admin.script_flush() is True  # the private server's, nothing shared
    await admin.aclose()
    sent = sent_commands(store.client, monkeypatch)
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
    sent = sent_commands(store.client, monkeypatch)
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
    """What one script call does on the lean path, counted: one ``execute_command``, one
    ``writelines`` on the connection's stream and its reply read from the stream, none of
    redis-py's send/read methods nor the pool's ``get_connection``/``release`` once a connection is
    free, and the connection back in the pool."""
    async with RedisStore(f"redis://127.0.0.1:{server}/0", namespace=unique_namespace()) as store:
        await store.put(KEY, b"v1")  # a connection is open and free
        pool = store.client.connection_pool
        (conn,) = pool._available_connections
        calls: list[str] = []
        for obj, names in (
            (conn, ("send_packed_command", "read_response")),
            (pool, ("get_connection", "release")),
            (conn._reader, ("read",)),
        ):
            for name in names:
                monkeypatch.setattr(obj, name, _recorded(calls, name, getattr(obj, name)))
        writes = _writes(conn, monkeypatch)
        sent = sent_commands(store.client, monkeypatch)
        assert await store.put(KEY, b"v2", expected_version=1) == 2
        assert sent == ["EVALSHA"] and len(writes) == 1 and calls == ["read"]
        assert pool._available_connections == [conn] and not pool._in_use_connections
        assert await store.get(KEY) is not None  # a hot single command (HMGET, keys=) too
        assert sent == ["EVALSHA", "HMGET"] and len(writes) == 2 and calls == ["read"] * 2
        calls.clear()  # a command outside LEAN_COMMANDS: redis-py's execute_command, its pool calls
        assert await store.client.execute_command("STRLEN", "absent") == 0
        assert calls[0] == "get_connection" and calls[-1] == "release"
        assert "send_packed_command" in calls and "read_response" in calls
        assert await store.delete(KEY)


def _recorded(calls: list[str], name: str, inner: Any) -> Any:
    async def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return await inner(*args, **kwargs)

    return recorded


def _writes(conn: Any, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """What ``conn`` writes to its stream, one entry per ``writelines``."""
    writes: list[bytes] = []
    writer = conn._writer
    inner = writer.writelines

    def writelines(data: Any) -> None:
        data = list(data)
        writes.append(b"".join(data))
        inner(data)

    monkeypatch.setattr(writer, "writelines", writelines)
    return writes


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


def test_a_script_call_packs_as_redis_py_packs_it_whatever_changed_since_the_last() -> None:
    """A script call repacks only the arguments that are other objects than its last call's
    (``_redis_pack``): each call still packs byte for byte as redis-py packs it, with another
    reservation id and amounts, another length, mostly new arguments, and a value redis-py
    refuses."""
    conn = aioredis.Connection()
    sha, keys = "c" * 40, ("k1", "k\u00e9")
    calls = [
        ("EVALSHA", sha, 2, *keys, 1, f"rid{i}", 1000 + i, 0, 900_000, 58.8, "tenant", -1)
        for i in range(3)
    ]
    calls.append(("EVALSHA", sha, 2, *keys, 1, "rid9", 7))  # another number of arguments
    calls.append(("EVALSHA", sha, 2, *keys, 1, "rid10", 8))
    calls.append(("EVALSHA", sha, 2, "x", "y", 2, b"\x00", 3.5))  # mostly new: hiredis's
    calls.append(("EVALSHA", sha, 2, "x", "z", 2, b"\x01", 1e-7))
    for args in calls:
        assert b"".join(_pack(conn, args)) == b"".join(conn.pack_command(*args))
    with pytest.raises(DataError):
        _pack(conn, ("EVALSHA", "d" * 40, 0, "a", 1))  # kept: a call of this script
        _pack(conn, ("EVALSHA", "d" * 40, 0, "a", True))


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


# The send-and-read of the lean path (``_redis_wire.exchange``) against redis-py's, each behaviour
# on a client of each path from the same URL: ``client_from_url`` (lean) and ``lean=False``.

ECHO = "return ARGV[1]"


@pytest.fixture(params=["lean", "redis-py"])
async def client(request: pytest.FixtureRequest, proxy: Proxy) -> AsyncIterator[Any]:
    """A client through the proxy, of the lean path or of redis-py's, socket timeout 0.3 s."""
    import redis

    from agentscope_teams.store._redis_client import client_from_url

    lean = request.param == "lean"
    url = f"redis://127.0.0.1:{proxy.port}/0?socket_timeout=0.3"
    c = client_from_url(redis, url, 8, 1.0, lean=lean)
    assert isinstance(c, LeanRedis) is lean
    yield c
    await c.aclose()


def _connected(client: Any) -> list[Any]:
    pool = client.connection_pool
    conns = [*pool._available_connections, *pool._in_use_connections]
    return [c for c in conns if c.is_connected]


async def test_one_timer_and_one_write_per_lean_command(
    server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lean command arms one timer (one ``loop.call_at``: its socket timeout covers its write
    and its read) and writes once; redis-py's path arms two (the write's and the read's)."""
    import redis

    from agentscope_teams.store._redis_client import client_from_url

    loop = asyncio.get_running_loop()
    timers: list[float] = []
    inner = loop.call_at

    def call_at(when: float, *args: Any, **kwargs: Any) -> Any:
        timers.append(when)
        return inner(when, *args, **kwargs)

    for lean, expected in ((True, 1), (False, 2)):
        c = client_from_url(redis, f"redis://127.0.0.1:{server}/0", 8, 1.0, lean=lean)
        script = c.register_script(ECHO)
        assert await script(args=["warm"]) == b"warm"  # connected, script loaded
        (conn,) = c.connection_pool._available_connections
        writes = _writes(conn, monkeypatch)
        monkeypatch.setattr(loop, "call_at", call_at)
        for n in range(1, 4):
            assert await script(args=[f"x{n}"]) == f"x{n}".encode()
            assert await c.hmget("absent", "f") == [None]
            assert len(timers) == 2 * n * expected and len(writes) == 2 * n
        monkeypatch.setattr(loop, "call_at", inner)
        timers.clear()
        await c.aclose()


async def test_a_socket_timeout_disconnects_and_raises_timeout_error(
    client: Any, server: int
) -> None:
    """The server paused past the socket timeout: redis-py's ``TimeoutError``, the connection
    dropped; the next command opens a new one and gets its own reply."""
    from redis.exceptions import TimeoutError as RedisTimeoutError

    script = client.register_script(ECHO)
    assert await script(args=["a"]) == b"a"
    (before,) = _connected(client)
    admin = aioredis.Redis(port=server)
    assert await admin.client_pause(1000)
    try:
        with pytest.raises(RedisTimeoutError, match=r"^Timeout reading from 127\.0\.0\.1:"):
            await script(args=["late"])
        assert not before.is_connected and not _connected(client)
    finally:
        await admin.execute_command("CLIENT UNPAUSE")
        await admin.aclose()
    assert await script(args=["b"]) == b"b"
    assert _connected(client) == [before]  # reconnected


async def test_a_server_going_away_is_a_connection_error_and_the_next_command_reconnects(
    client: Any, proxy: Proxy
) -> None:
    from redis.exceptions import ConnectionError as RedisConnectionError

    script = client.register_script(ECHO)
    assert await script(args=["a"]) == b"a"
    proxy.mode = "drop"
    with pytest.raises(RedisConnectionError, match=r"^Connection closed by server\.$"):
        await script(args=["lost"])
    assert proxy.acted == 1 and not _connected(client)
    proxy.mode = ""
    assert await script(args=["b"]) == b"b"
    assert len(_connected(client)) == 1


async def test_a_script_error_is_raised_and_the_connection_stays(client: Any) -> None:
    from redis.exceptions import ResponseError

    script = client.register_script(ECHO)
    assert await script(args=["a"]) == b"a"
    (conn,) = _connected(client)
    failing = client.register_script("return redis.error_reply('boom')")
    for _ in range(2):
        with pytest.raises(ResponseError, match=r"^boom$"):
            await failing()
    with pytest.raises(ResponseError, match="wrong number of arguments"):
        await client.execute_command("HMGET", "k")
    assert _connected(client) == [conn] and conn.is_connected
    assert await script(args=["b"]) == b"b"
    assert _connected(client) == [conn]


async def test_a_cancelled_commands_reply_never_reaches_another_caller(
    client: Any, proxy: Proxy
) -> None:
    """A command cancelled while it waits for its reply drops its connection: a command sent
    after it, before that reply came, reads its own reply on another connection."""
    script = client.register_script(ECHO)
    assert await script(args=["warm"]) == b"warm"
    proxy.mode = "hold"
    first = asyncio.create_task(script(args=["first"]))
    await proxy.wait_acted(1)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert not _connected(client)
    second = asyncio.create_task(script(args=["second"]))
    await proxy.wait_acted(2)
    proxy.released.set()  # the first reply, then the second
    assert await second == b"second"


async def test_retries_of_the_pool_still_apply(proxy: Proxy) -> None:
    """``retry_on_timeout``: a command whose reply never came is sent again on a new connection."""
    import redis

    from agentscope_teams.store._redis_client import client_from_url

    url = f"redis://127.0.0.1:{proxy.port}/0?socket_timeout=0.3&retry_on_timeout=true"
    for lean in (True, False):
        c = client_from_url(redis, url, 8, 1.0, lean=lean)
        script = c.register_script(ECHO)
        assert await script(args=["a"]) == b"a"
        proxy.mode, proxy.acted = "swallow once", 0
        assert await script(args=["retried"]) == b"retried"
        assert proxy.acted == 1 and len(_connected(c)) == 1
        await c.aclose()


async def test_a_push_message_before_the_reply_is_handled_by_the_parser(
    client: Any, proxy: Proxy, server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RESP3 client tracking: an invalidation pushed while a command waits for its reply is
    handled by the connection's parser; the command gets its own reply."""
    script = client.register_script(ECHO)
    assert await script(args=["a"]) == b"a"
    (conn,) = _connected(client)
    await conn.send_command("CLIENT", "TRACKING", "ON")
    assert await conn.read_response() == b"OK"
    key = f"lean-push-{unique_namespace()}"
    assert await client.hmget(key, "f") == [None]  # tracked by this connection
    pushes: list[Any] = []
    pushed = asyncio.Event()
    inner = conn._parser.handle_push_response

    async def handle(response: Any, **kwargs: Any) -> Any:
        pushes.append(response)
        pushed.set()
        return await inner(response, **kwargs)

    monkeypatch.setattr(conn._parser, "handle_push_response", handle)
    proxy.mode = "hold"
    reply = asyncio.create_task(script(args=["own"]))
    await proxy.wait_acted(1)
    admin = aioredis.Redis(port=server)
    await admin.hset(key, "f", "v")  # the invalidation goes out to the tracked connection
    await admin.delete(key)
    await admin.aclose()
    async with asyncio.timeout(10):  # a guard against a hang, not a measure
        await pushed.wait()  # read ahead of the reply
    proxy.released.set()
    assert await reply == b"own"
    assert pushes == [[b"invalidate", [key.encode()]]]
    assert _connected(client) == [conn]
    assert await script(args=["b"]) == b"b"


async def test_a_due_health_check_takes_redis_py_path(
    server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``health_check_interval`` the command takes redis-py's send, which pings first; the
    next one is lean again."""
    import redis

    from agentscope_teams.store._redis_client import client_from_url

    c = client_from_url(redis, f"redis://127.0.0.1:{server}/0?health_check_interval=30", 8, 1.0)
    script = c.register_script(ECHO)
    assert await script(args=["a"]) == b"a"
    (conn,) = c.connection_pool._available_connections
    writes = _writes(conn, monkeypatch)
    conn.next_health_check = -1.0
    assert await script(args=["b"]) == b"b"
    assert [w.split(b"\r\n")[2] for w in writes] == [b"PING", b"EVALSHA"]
    assert conn.next_health_check > asyncio.get_running_loop().time()
    assert await script(args=["c"]) == b"c"
    assert len(writes) == 3
    await c.aclose()


def test_a_connection_that_reads_its_own_way_keeps_redis_py_path() -> None:
    """The lean send-and-read does the work of redis-py's ``read_response`` and send: a connection
    class that overrides one of them (or a redis-py without hiredis' parser) keeps redis-py's."""
    import redis

    from agentscope_teams.store._redis_client import timer_send
    from agentscope_teams.store._redis_lean import fits

    class OwnRead(aioredis.Connection):
        async def read_response(self, *args: Any, **kwargs: Any) -> Any:
            return await super().read_response(*args, **kwargs)

    url = "redis://127.0.0.1:6379/0"
    for klass, lean in ((aioredis.Connection, True), (OwnRead, False)):
        pool = aioredis.ConnectionPool.from_url(url, connection_class=timer_send(redis, klass))
        assert fits(pool) is lean
