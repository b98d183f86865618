"""Redis connection pool under 1,000 concurrent operations: pool kind, size and reply parser.

Each round starts 1,000 tasks at once; each does what a one-step call does to its session record on
``RedisStore``: a get, a create-only put, a get and a CAS put (1 KB value, its own key). Reported per
configuration: the client process's CPU per task (``time.process_time``; the Redis server is another
process) and the wall time of the round, median over interleaved rounds ± interquartile spread, and
the CPU as a ratio to the store's default (the first row), measured in the same run.

Configurations: ``BlockingConnectionPool`` of 64 connections with redis-py's pure-Python RESP2 parser
(the store's settings before issue 14), the same with ``hiredis``, and larger blocking pools
(256, 1,024), a plain ``ConnectionPool`` of 1,024 with ``hiredis``, and the store's own client as
built from a URL (a semaphore gate of 64 turns over an unbounded plain pool, ``hiredis``: the
default since issue 14's pool change). A blocking pool makes every acquisition take its
``asyncio.Condition`` lock and arm a timeout timer, waiting or not; the gate takes a free turn
without either.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import anyio

from agentscope_teams.store.redis import RedisStore

from .fixtures import REDIS_URL, drop_redis_namespace
from .stats import Sample, compare, fmt, section, table, us

VALUE = os.urandom(1024)

CONFIGS: dict[str, tuple[str, int, bool]] = {  # name -> (pool kind, max_connections, hiredis)
    "blocking 64, Python parser (before)": ("blocking", 64, False),
    "blocking 64, hiredis": ("blocking", 64, True),
    "blocking 256, hiredis": ("blocking", 256, True),
    "blocking 1024, hiredis": ("blocking", 1024, True),
    "plain 1024, hiredis": ("plain", 1024, True),
    "gate 64 + plain pool, hiredis (the store's default)": ("gate", 64, True),
}


def _client(kind: str, size: int, hiredis: bool) -> Any:
    import redis.asyncio as aioredis
    from redis._parsers import _AsyncHiredisParser, _AsyncRESP2Parser

    parser = _AsyncHiredisParser if hiredis else _AsyncRESP2Parser
    options: dict[str, Any] = {"max_connections": size, "parser_class": parser}
    if kind == "blocking":
        pool: Any = aioredis.BlockingConnectionPool.from_url(REDIS_URL, timeout=20, **options)
    else:
        pool = aioredis.ConnectionPool.from_url(REDIS_URL, **options)
    return aioredis.Redis.from_pool(pool)


async def _task(store: RedisStore, key: tuple[str, ...]) -> None:
    await store.get(key)
    version = await store.put(key, VALUE, expected_version=0)
    await store.get(key)
    await store.put(key, VALUE, expected_version=version)


def _round(store: RedisStore, tasks: int, walls: list[float]) -> Any:
    async def run(ops: int) -> float:
        n = tasks if ops > 2 else ops  # the warm-up runs 2 tasks
        keys = [("pool", "o:", "u:bench", uuid.uuid4().hex) for _ in range(n)]
        c0, t0 = time.process_time(), time.perf_counter()
        async with anyio.create_task_group() as tg:
            for key in keys:
                tg.start_soon(_task, store, key)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        if n == tasks:
            walls.append(wall)
        return cpu / n

    return run


async def run(fast: bool = False) -> str:
    tasks, rounds = (100, 3) if fast else (1000, 7)
    namespace = "bench-pool-" + uuid.uuid4().hex[:8]
    stores: dict[str, RedisStore] = {}
    walls: dict[str, list[float]] = {name: [] for name in CONFIGS}
    try:
        for name, (kind, size, hiredis) in CONFIGS.items():
            if kind == "gate":  # the store's own client, as built from its URL
                stores[name] = RedisStore(REDIS_URL, namespace=namespace, max_connections=size)
            else:
                stores[name] = RedisStore(client=_client(kind, size, hiredis), namespace=namespace)
        named = {name: _round(stores[name], tasks, walls[name]) for name in CONFIGS}
        cpu = await compare(named, ops=tasks, rounds=rounds)
    except Exception as exc:  # Redis down: say so
        return section("Redis connection pool", "", "", [f"not measured ({exc})"])
    finally:
        for store in stores.values():
            if store._owns_client:
                await store.aclose()
            else:
                await store._client.aclose()  # injected clients are the caller's to close
        await drop_redis_namespace(namespace)
    base = cpu[next(iter(CONFIGS))].median
    rows = [
        [
            name,
            fmt(cpu[name]),
            fmt(Sample(name, walls[name]), _ms),
            f"{cpu[name].median / base:.2f}",
        ]
        for name in CONFIGS
    ]
    head = ["pool", "client CPU µs per task", "wall ms per round", "CPU x before"]
    intro = (
        f"{tasks} concurrent tasks per round, each a get, a create, a get and a CAS put of 1 KB on "
        "its own key (4 commands); client-process CPU per task and wall time per round, median "
        "over interleaved rounds ± interquartile spread."
    )
    best = min(CONFIGS, key=lambda n: cpu[n].median)
    note = f"lowest CPU: {best} ({us(cpu[best].median)} µs per task)"
    return section(
        "Redis connection pool under 1,000 concurrent tasks", intro, table(head, rows), [note]
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f}"
