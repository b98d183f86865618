"""Client CPU per Redis command of the store: its lean path against redis-py's (issues 26/27).

Two stores built from the same URL in one process, alike but for the client class: the store's
(``_redis_lean.LeanRedis``: script calls and hot single commands skip redis-py's
``execute_command`` layers) and redis-py's ``Redis`` with its registered scripts (the path before,
``client_from_url(lean=False)``). Each round runs ``TASKS`` concurrent tasks, each ``CALLS`` CAS
puts of 1 KB on its own key (one ``EVALSHA`` each) or ``CALLS`` gets (one ``HMGET`` each);
client-process CPU (``time.process_time``) and wall per command, median over interleaved rounds ±
interquartile spread.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from typing import Any
from unittest import mock

import anyio

from agentscope_teams.store import _redis_client as rc
from agentscope_teams.store.redis import RedisStore

from .fixtures import REDIS_URL, drop_redis_namespace
from .stats import Sample, compare, fmt, ratio, section, table

VALUE = os.urandom(1024)
CALLS = 10


def _store(namespace: str, lean: bool) -> RedisStore:
    def build(redis: Any, url: str, size: int, timeout: float) -> Any:
        return original(redis, url, size, timeout, lean)

    original = rc.client_from_url
    with mock.patch.object(rc, "client_from_url", build):
        return RedisStore(REDIS_URL, namespace=namespace)


async def _puts(store: RedisStore, key: tuple[str, ...]) -> None:
    version = await store.put(key, VALUE)
    for _ in range(CALLS):
        version = await store.put(key, VALUE, expected_version=version)


async def _gets(store: RedisStore, key: tuple[str, ...]) -> None:
    for _ in range(CALLS):
        await store.get(key)


def _round(store: RedisStore, task: Callable[..., Any], tasks: int, walls: list[float]) -> Any:
    keys = [("lean", "o:", "u:bench", uuid.uuid4().hex) for _ in range(tasks)]

    async def run(ops: int) -> float:
        n = tasks if ops > 2 else 2
        c0, t0 = time.process_time(), time.perf_counter()
        async with anyio.create_task_group() as tg:
            for key in keys[:n]:
                tg.start_soon(task, store, key)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        if n == tasks:
            walls.append(wall / (n * CALLS))
        return cpu / (n * CALLS)

    return run


async def run(fast: bool = False) -> str:
    tasks, rounds = (50, 3) if fast else (200, 9)
    namespace = "bench-lean-" + uuid.uuid4().hex[:8]
    stores = {"lean": _store(namespace, True), "redis-py": _store(namespace, False)}
    names = [f"{kind} {path}" for kind in ("EVALSHA", "HMGET") for path in stores]
    walls: dict[str, list[float]] = {n: [] for n in names}
    try:
        named = {
            n: _round(stores[n.split(" ", 1)[1]], _puts if "EVAL" in n else _gets, tasks, walls[n])
            for n in names
        }
        cpu = await compare(named, ops=tasks, rounds=rounds)
    except Exception as exc:  # Redis down: say so
        return section("Redis lean command path", "", "", [f"not measured ({exc})"])
    finally:
        for store in stores.values():
            await store.aclose()
        await drop_redis_namespace(namespace)
    rows = []
    for n in names:
        base = cpu[n.split(" ")[0] + " redis-py"]
        rows.append([n, fmt(cpu[n]), fmt(Sample(n, walls[n])), f"{ratio(cpu[n], base):.2f}"])
    head = ["command, path", "client CPU µs per command", "wall µs per command", "CPU x redis-py"]
    intro = (
        f"{tasks} concurrent tasks per round, each {CALLS} CAS puts (EVALSHA) or {CALLS} gets "
        "(HMGET) of 1 KB on its own key; median over interleaved rounds ± interquartile spread."
    )
    return section("Redis lean command path", intro, table(head, rows), [])
