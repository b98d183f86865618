"""Single-client get / put / CAS latency per backend, next to raw redis-py GET / SET.

Every figure is the median over rounds of the mean per-op latency, with its interquartile spread;
ratios compare with raw redis-py measured in the same run.
"""

from __future__ import annotations

import os
import tempfile
import uuid

from agentscope_teams.store import store_from_url

from .stats import Sample, fmt, interleaved, table

REDIS_URL = os.environ.get("AGENTSCOPE_TEAMS_REDIS_URL", "redis://127.0.0.1:6379/0")
BACKENDS = {
    "memory": "memory://",
    "file": None,
    "sqlite": None,
    "mariadb": os.environ.get("AGENTSCOPE_TEAMS_MYSQL_URL", "mysql://root@127.0.0.1:3306/test"),
    "postgres": os.environ.get(
        "AGENTSCOPE_TEAMS_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
    ),
    "redis": REDIS_URL,
}


async def _raw_redis(value: bytes, ops: int, rounds: int) -> tuple[Sample, Sample]:
    import redis.asyncio as aioredis

    client = aioredis.from_url(REDIS_URL)
    key = f"bench-raw-{uuid.uuid4().hex}"
    try:
        await client.set(key, value)
        s = await interleaved(
            {"get": lambda i: client.get(key), "set": lambda i: client.set(key, value)},
            ops=ops,
            rounds=rounds,
        )
        await client.delete(key)
    finally:
        await client.aclose()
    return s["get"], s["set"]


async def _backend(url: str, value: bytes, ops: int, rounds: int) -> list[Sample]:
    ns = "bench-" + uuid.uuid4().hex[:8]
    async with store_from_url(url) as store:
        key = (ns, "k")
        version = [await store.put(key, value)]

        async def put(i: int) -> None:
            version[0] = await store.put(key, value)

        async def cas(i: int) -> None:
            version[0] = await store.put(key, value, expected_version=version[0])

        s = await interleaved(
            {"get": lambda i: store.get(key), "put": put, "cas": cas}, ops=ops, rounds=rounds
        )
        await store.delete(key)
    return [s["get"], s["put"], s["cas"]]


async def run(fast: bool = False) -> str:
    ops, rounds = (20, 3) if fast else (120, 9)
    value = os.urandom(512)
    raw_get, raw_set = await _raw_redis(value, ops, rounds)
    rows = [["raw redis-py", fmt(raw_get), fmt(raw_set), "-", "1.00", "1.00"]]
    with tempfile.TemporaryDirectory() as tmp:
        urls = dict(BACKENDS, file=f"file://{tmp}/store", sqlite=f"sqlite:///{tmp}/s.db")
        for name, url in urls.items():
            assert url is not None
            get, put, cas = await _backend(url, value, ops, rounds)
            rows.append(
                [
                    name,
                    fmt(get),
                    fmt(put),
                    fmt(cas),
                    f"{get.median / raw_get.median:.2f}",
                    f"{cas.median / raw_set.median:.2f}",
                ]
            )
    head = ["backend", "get µs", "put µs", "CAS put µs", "get / raw GET", "CAS / raw SET"]
    intro = (
        "Single client, median per operation over rounds ± interquartile spread; the raw redis-py "
        "row was measured just before, on the same server."
    )
    return f"### Store latency (512-byte value, one client)\n\n{intro}\n\n" + table(head, rows)
