"""RedisStore specifics: raw key layout and hash tags, client ownership, outages, index cleanup.

Shared semantics are in ``test_conformance.py``; here every store gets its own namespace on the
shared server, and tests that kill a server start their own ``redis-server`` on a free port.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

pytest.importorskip("redis")

import redis.asyncio as aioredis
from redis.crc import key_slot

from agentscope_teams.errors import (
    ConfigurationError,
    StoreBusyError,
    StoreUnavailableError,
    VersionConflict,
    public_message,
)
from agentscope_teams.store import BaseStore, Entry, InMemoryStore, Key
from agentscope_teams.store.redis import RedisStore

from ..backends import REDIS_URL, unique_namespace
from ..conftest import require_service

pytestmark = pytest.mark.anyio


@pytest.fixture
def redis_url() -> str:
    require_service("redis")
    return REDIS_URL


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    c = aioredis.Redis.from_url(redis_url)
    yield c
    await c.aclose()


@pytest.fixture
async def store(client: aioredis.Redis) -> AsyncIterator[RedisStore]:
    async with RedisStore(client=client, namespace=unique_namespace()) as s:
        yield s
    await _drop_namespace(client, s.namespace)


async def _raw_keys(client: aioredis.Redis, namespace: str) -> list[str]:
    return sorted([k.decode() async for k in client.scan_iter(match=f"{namespace}:*", count=1000)])


async def _drop_namespace(client: aioredis.Redis, namespace: str) -> None:
    keys = await _raw_keys(client, namespace)
    if keys:
        await client.delete(*keys)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------- key layout


async def test_raw_keys_carry_the_hash_tag(store: RedisStore, client: aioredis.Redis) -> None:
    n = store.namespace
    await store.put(("t1", "s1", "x", "y", "z"), b"v")
    await store.append(("t1", "s1", "x", "events"), b"e")
    assert await _raw_keys(client, n) == sorted(
        [
            f"{n}:{{t1/s1/x}}/y/z",  # the entry
            f"{n}:{{t1/s1/x}}/y:idx",  # indexes of the prefixes with >= 3 segments
            f"{n}:{{t1/s1/x}}:idx",
            f"{n}:{{t1/s1}}:idx",  # shorter prefixes: other slots (documented)
            f"{n}:{{t1}}:idx",
            f"{n}::idx",
            f"{n}:{{t1/s1/x}}/events:stream",
            f"{n}:{{t1/s1/x}}/events:seq",
        ]
    )
    tag_slot = key_slot(b"t1/s1/x")
    for raw in await _raw_keys(client, n):
        if "{t1/s1/x}" in raw:
            assert key_slot(raw.encode()) == tag_slot, raw


async def test_hostile_segments_cannot_break_the_hash_tag(
    store: RedisStore, client: aioredis.Redis
) -> None:
    key: Key = ("}{", "a:b*", "{x}", "rest", "}")
    await store.put(key, b"v")
    entry = next(k for k in await _raw_keys(client, store.namespace) if not k.endswith(":idx"))
    tag = entry[entry.index("{") + 1 : entry.index("}")]
    assert tag == "%7D%7B/a%3Ab%2A/%7Bx%7D"
    assert key_slot(entry.encode()) == key_slot(tag.encode())
    assert await store.list_keys(key[:3]) == [key]


@pytest.mark.parametrize("segments", [1, 2, 5])
async def test_hash_tag_segments_sets_the_tag(client: aioredis.Redis, segments: int) -> None:
    async with RedisStore(
        client=client, namespace=unique_namespace(), hash_tag_segments=segments
    ) as store:
        key = ("a", "b", "c", "d")
        await store.put(key, b"v")
        head, tail = "/".join(key[:segments]), "".join("/" + s for s in key[segments:])
        assert f"{store.namespace}:{{{head}}}{tail}" in await _raw_keys(client, store.namespace)
        assert await store.get(key) is not None
    await _drop_namespace(client, store.namespace)


@pytest.mark.parametrize("segments", [1, 2, 3, 5])
async def test_listing_matches_the_memory_store_at_every_depth(
    client: aioredis.Redis, segments: int
) -> None:
    # Random keys of mixed depth with characters that sort around '/', then random deletes; every
    # prefix of every key, paged with small limits, must list exactly what InMemoryStore lists.
    rng = random.Random(segments)
    alphabet = ["a", "b", "a-", "a!", "a.b", "a0", "~", "é", "{", "x y"]
    keys = {tuple(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(150)}
    oracle = InMemoryStore()
    async with RedisStore(
        client=client, namespace=unique_namespace(), hash_tag_segments=segments
    ) as store:
        for key in sorted(keys):
            await oracle.put(key, b"v")
            await store.put(key, b"v")
        for key in rng.sample(sorted(keys), 40):
            assert await store.delete(key) is await oracle.delete(key)
        prefixes = {key[:d] for key in keys for d in range(len(key) + 1)}
        for prefix in sorted(prefixes):
            assert await _list_all(store, prefix, 7) == await _list_all(oracle, prefix, 7), prefix
    await _drop_namespace(client, store.namespace)


async def _list_all(store: BaseStore, prefix: Key, page: int) -> list[Key]:
    out: list[Key] = []
    while batch := await store.list_keys(prefix, limit=page, after=out[-1] if out else None):
        out.extend(batch)
    return out


# --------------------------------------------------------------------------- round trips


class _CountingClient:
    """Counts commands sent through ``execute_command`` (scripts, HMGET, XRANGE, DEL, ...)."""

    def __init__(self, client: aioredis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        real: Any = client.execute_command

        async def counting(*args: Any, **options: Any) -> Any:
            self.calls.append(str(args[0]))
            return await real(*args, **options)

        monkeypatch.setattr(client, "execute_command", counting)


async def test_each_operation_is_one_round_trip(
    store: RedisStore, client: aioredis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = _CountingClient(client, monkeypatch)
    key, stream = ("t", "s", "a", "b"), ("t", "s", "log")
    operations = [
        store.put(key, b"v", expected_version=0),
        store.put(key, b"v2", expected_version=1, ttl=60),
        store.get(key),
        store.delete(key, expected_version=2),
        store.append(stream, b"e"),
        store.read(stream),
        store.delete_stream(stream),
    ]
    for op in operations:
        counter.calls.clear()
        await op
        assert len(counter.calls) == 1, counter.calls
    counter.calls.clear()
    with pytest.raises(VersionConflict):
        await store.put(key, b"v", expected_version=5)
    assert len(counter.calls) == 1


async def test_entries_and_stream_pages_read_together_as_apart(
    store: RedisStore, client: aioredis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, gone = ("t", "s", "a", "1"), ("t", "s", "a", "2"), ("t", "s", "a", "3")
    log, empty = ("t", "s", "log"), ("t", "s", "none")
    await store.put(a, b"va")
    await store.put(b, b"vb")
    await store.put(b, b"vb2", expected_version=1)
    for i in range(5):
        await store.append(log, b"e%d" % i)
    counter = _CountingClient(client, monkeypatch)
    pipelines: list[object] = []
    real = store._pipelined

    async def pipelined(build: Any) -> Any:
        pipelines.append(build)
        return await real(build)

    monkeypatch.setattr(store, "_pipelined", pipelined)
    pages = [(log, 1, 2), (log, 4, 10), (empty, 0, 10)]
    entries, read = await store.get_many_and_read([a, b, gone], pages)
    assert len(pipelines) == 1 and counter.calls == []  # one pipeline, no command of its own
    assert entries == await store.get_many([a, b, gone])
    assert read == [await store.read(s, after=n, limit=m) for s, n, m in pages]
    assert read[0] == [(2, b"e1"), (3, b"e2")]
    with pytest.raises(ValueError):
        await store.get_many_and_read([a], [(log, -1, 10)])


# --------------------------------------------------------------------------- expiry and indexes


async def test_expired_keys_leave_every_index(store: RedisStore, client: aioredis.Redis) -> None:
    n = store.namespace
    kept = ("t", "s", "a", "kept")
    await store.put(kept, b"v")
    for i in range(5):
        await store.put(("t", "s", "a", f"gone-{i}"), b"v", ttl=0.05)
        await store.put(("t", f"other-{i}", "b", "c"), b"v", ttl=0.05)
    await anyio.sleep(0.3)
    assert await store.list_keys(("t", "s")) == [kept]
    # Listing a deep prefix dropped the expired members of all their ancestor indexes, the root too.
    assert await client.zrange(f"{n}::idx", 0, -1) == [
        *(f"t/other-{i}/b/c".encode() for i in range(5)),
        b"t/s/a/kept",
    ]
    assert await store.list_keys(()) == [kept]
    for raw in await _raw_keys(client, n):
        if raw.endswith(":idx"):
            assert len(await client.zrange(raw, 0, -1)) == 1, raw
    assert len(await _raw_keys(client, n)) == 5  # the entry and its four indexes


async def test_listing_pages_past_many_expired_keys(store: RedisStore) -> None:
    live = [("p", f"{i:03d}") for i in range(0, 300, 10)]
    for i in range(300):
        key = ("p", f"{i:03d}")
        await store.put(key, b"v", ttl=None if key in live else 0.05)
    await anyio.sleep(0.3)
    assert await store.list_keys(("p",), limit=5) == live[:5]
    assert await _list_all(store, ("p",), 4) == live


async def test_delete_removes_index_members(store: RedisStore, client: aioredis.Redis) -> None:
    await store.put(("t", "s", "a", "b"), b"v")
    assert await store.delete(("t", "s", "a", "b")) is True
    assert await _raw_keys(client, store.namespace) == []


# --------------------------------------------------------------------------- client ownership


async def test_injected_client_stays_open(client: aioredis.Redis) -> None:
    store = RedisStore(client=client, namespace=unique_namespace())
    async with store:
        await store.put(("k",), b"v")
    assert await client.ping() is True
    assert await client.get("no-such-key-for-this-test") is None
    await _drop_namespace(client, store.namespace)


async def test_url_client_is_closed_by_aclose(redis_url: str, client: aioredis.Redis) -> None:
    name = unique_namespace()
    sep = "&" if "?" in redis_url else "?"
    async with RedisStore(f"{redis_url}{sep}client_name={name}", namespace=name) as store:
        await store.put(("k",), b"v")
        assert name in await _client_names(client)
    for _ in range(1000):  # the server drops a closed socket's client soon after (<= 10 s)
        if name not in await _client_names(client):
            break
        await anyio.sleep(0.01)
    assert name not in await _client_names(client)
    await _drop_namespace(client, name)


async def test_a_full_pool_makes_callers_wait_instead_of_failing(
    redis_url: str, client: aioredis.Redis
) -> None:
    name = unique_namespace()
    sep = "&" if "?" in redis_url else "?"
    url = f"{redis_url}{sep}client_name={name}"
    async with RedisStore(url, namespace=name, max_connections=2) as store:
        done: list[int] = []

        async def write(i: int) -> None:
            await store.put((name, "k", str(i)), b"v")
            assert await store.get((name, "k", str(i))) is not None
            done.append(i)

        async with anyio.create_task_group() as tg:
            for i in range(60):
                tg.start_soon(write, i)
        opened = [c for c in await client.client_list() if c.get("name") == name]
    assert sorted(done) == list(range(60))
    assert 1 <= len(opened) <= 2  # the gate kept 60 concurrent writers on 2 connections
    await _drop_namespace(client, name)


async def test_no_turn_within_pool_timeout_names_the_settings(redis_url: str) -> None:
    name = unique_namespace()
    async with RedisStore(redis_url, namespace=name, max_connections=1, pool_timeout=0.1) as store:
        async with store._turn():  # the only turn is taken: the next operation must wait
            with pytest.raises(StoreUnavailableError, match="max_connections or pool_timeout"):
                await store.get((name, "k"))
        assert await store.get((name, "k")) is None  # the turn is back: operations run again


async def test_a_full_gate_is_busy_yet_a_lease_is_given_back(redis_url: str) -> None:
    name = unique_namespace()
    lease = (name, "lease")
    async with RedisStore(redis_url, namespace=name, max_connections=1, pool_timeout=0.1) as store:
        version = await store.put(lease, b"holder", indexed=False)
        async with store._turn():  # the only turn is taken
            with pytest.raises(StoreBusyError) as caught:
                await store.put((name, "k"), b"v")  # the control: other operations wait, then fail
            assert (caught.value.limit, caught.value.retry_after) == (1, 1.0)
            host = urlsplit(redis_url).hostname or ""
            assert host in str(caught.value) and host not in public_message(caught.value)
            # an unindexed delete (a lease given back) takes the reserved turn at once
            assert await store.delete(lease, expected_version=version, indexed=False) is True
        assert await store.get(lease) is None


async def test_the_board_queue_waits_for_a_turn_of_the_same_gate(redis_url: str) -> None:
    from agentscope_teams.teams import TeamKeys
    from agentscope_teams.teams.queues.redis import RedisBoardQueue

    name = unique_namespace()
    async with RedisStore(redis_url, namespace=name, max_connections=1, pool_timeout=0.1) as store:
        queue = RedisBoardQueue(store, TeamKeys((f"o:{name}", "u:bob"), "team-1"))
        async with store._turn():  # the only turn is taken: the queue's own commands must wait
            with pytest.raises(StoreUnavailableError, match="max_connections or pool_timeout"):
                await queue.drop()
        await queue.drop()  # the turn is back


async def _client_names(client: aioredis.Redis) -> set[str]:
    return {str(c.get("name")) for c in await client.client_list()}


async def test_decode_responses_client_is_rejected(redis_url: str) -> None:
    c = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        with pytest.raises(ConfigurationError, match="decode_responses"):
            RedisStore(client=c)
    finally:
        await c.aclose()


@pytest.mark.parametrize(
    "options",
    [{"namespace": ""}, {"namespace": "a{b"}, {"hash_tag_segments": 0}],
    ids=["empty-namespace", "brace-namespace", "zero-segments"],
)
def test_bad_options_are_configuration_errors(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        RedisStore("redis://127.0.0.1:6379/0", **options)


def test_malformed_url_is_a_configuration_error_without_password() -> None:
    with pytest.raises(ConfigurationError, match="port") as info:
        RedisStore("redis://user:s3cret-pw@host:notaport/0")
    assert "s3cret-pw" not in str(info.value)


# --------------------------------------------------------------------------- outages


async def test_unreachable_server_names_url_without_password() -> None:
    port = _free_port()
    url = f"redis://user:s3cret-pw@127.0.0.1:{port}/0"
    with pytest.raises(StoreUnavailableError) as info:
        async with RedisStore(url):
            pass
    message = str(info.value)
    assert f"redis://user:***@127.0.0.1:{port}/0" in message
    assert "s3cret-pw" not in message
    assert "check that the server is running" in message
    store = RedisStore(url)  # without setup(), the first operation reports it
    with pytest.raises(StoreUnavailableError, match=str(port)):
        await store.put(("k",), b"v")
    await store.aclose()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[tuple[int, Any]]:
    """A private redis-server on a free port; yields (port, restart function)."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    port = _free_port()
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "no", "--dir", str(tmp_path)]
        procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        pytest.fail(f"redis-server on port {port} did not start")

    def stop() -> None:
        procs[-1].terminate()
        procs[-1].wait(timeout=20)

    start()
    yield port, (start, stop)
    for p in procs:
        if p.poll() is None:
            p.terminate()
            p.wait(timeout=20)


async def test_server_outage_raises_then_recovers(own_redis: tuple[int, Any]) -> None:
    port, (start, stop) = own_redis
    async with RedisStore(f"redis://:pw-not-needed@127.0.0.1:{port}/0") as store:
        await store.put(("a", "b"), b"v")
        stop()
        for _ in range(2):  # a broken pooled connection, then a refused reconnect
            with pytest.raises(StoreUnavailableError, match=f"127.0.0.1:{port}") as info:
                await store.get(("a", "b"))
            assert "pw-not-needed" not in str(info.value)
        start()
        # The new server has no data and no cached scripts; the store works again regardless.
        assert await store.get(("a", "b")) is None
        assert await store.put(("a", "b"), b"v2", expected_version=0) == 1
        assert await store.append(("a", "log"), b"e") == 1
        assert await store.list_keys(("a",)) == [("a", "b")]


async def test_a_write_to_a_primary_demoted_by_a_failover_is_unavailable(
    own_redis: tuple[int, Any],
) -> None:
    """A server that became a replica (a failover) refuses writes with ``READONLY``: the store
    cannot serve them now, StoreUnavailableError as on a cluster; nothing was written."""
    port, _ = own_redis
    admin = aioredis.Redis(port=port)
    async with RedisStore(f"redis://127.0.0.1:{port}/0") as store:
        assert await store.put(("a", "b"), b"v") == 1
        await admin.execute_command("REPLICAOF", "127.0.0.1", str(_free_port()))  # no primary
        try:
            with pytest.raises(StoreUnavailableError, match="read only replica"):
                await store.put(("a", "b"), b"w")
            with pytest.raises(StoreUnavailableError, match="read only replica"):
                await store.append(("a", "log"), b"e")
        finally:
            await admin.execute_command("REPLICAOF", "NO", "ONE")
            await admin.aclose()
        assert await store.get(("a", "b")) == Entry(b"v", 1)


async def test_a_replica_that_lost_its_primary_is_unavailable(own_redis: tuple[int, Any]) -> None:
    """A replica whose link to its primary is down and that does not serve stale data answers
    ``MASTERDOWN``: the store cannot serve now, StoreUnavailableError as on a cluster."""
    port, _ = own_redis
    admin = aioredis.Redis(port=port)
    async with RedisStore(f"redis://127.0.0.1:{port}/0") as store:
        assert await store.put(("a", "b"), b"v") == 1
        await admin.config_set("replica-serve-stale-data", "no")
        await admin.execute_command("REPLICAOF", "127.0.0.1", str(_free_port()))  # no primary
        try:
            with pytest.raises(StoreUnavailableError, match="replica-serve-stale-data"):
                await store.get(("a", "b"))
        finally:
            await admin.execute_command("REPLICAOF", "NO", "ONE")
            await admin.config_set("replica-serve-stale-data", "yes")
            await admin.aclose()
