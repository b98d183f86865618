"""What a governed call writes to Redis (what a replica and the AOF receive, and what each script's
``redis.call`` costs the server): ``ADMIT`` reads each hash once and writes it once, ``FINISH``
deletes the reservation and writes each budget once; the limiter's expiry is pushed back at most
once a minute."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import redis.asyncio as aioredis

from agentscope_teams.store import RedisStore
from agentscope_teams.usage.backend import usage_backend
from agentscope_teams.usage.rules import Admission, Limit, Rates

from .test_riders import private  # noqa: F401  (the private redis-server fixture)

pytestmark = pytest.mark.anyio
WRITES = ("hset", "hincrby", "hdel", "pexpire", "del", "set")


async def _commands(url: str) -> dict[str, int]:
    client: Any = aioredis.from_url(url)
    try:
        stats = await client.info("commandstats")
    finally:
        await client.aclose()
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


async def _limiter_ttls(url: str) -> list[int]:
    """The expiry, in ms, of every limiter hash on the server."""
    client: Any = aioredis.from_url(url)
    try:
        return [int(await client.pttl(k)) async for k in client.scan_iter(match="*limiter*")]
    finally:
        await client.aclose()


def _since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in WRITES if after.get(k, 0) - before.get(k, 0)}


async def test_a_call_writes_each_budget_and_the_limiter_once_per_step(
    private: str,  # noqa: F811
) -> None:
    async with RedisStore(private) as store:
        be = usage_backend(store)
        limits = (Limit("team:a", 10**9, None), Limit("org:b", 10**9, None))
        rates = Rates(rpm=1e6, burst=100)

        def call() -> Admission:
            return Admission(limits, uuid.uuid4().hex, 500, 0, "p|m|k", rates, "t")

        first = call()
        await be.admit(first)  # a new limiter: its expiry is set
        await be.finish(first, 100, 0)
        [ttl] = await _limiter_ttls(private)
        assert 3_500_000 < ttl <= 3_600_000  # idle for an hour, it goes
        before = await _commands(private)
        a = call()
        admitted = await be.admit(a)
        between = await _commands(private)
        await be.finish(a, 100, 0)
        after = await _commands(private)
        assert admitted.refusal is None and admitted.wait_ms == 0
        assert _since(before, between) == {"hset": 3}  # two budgets, one limiter
        assert _since(between, after) == {"hdel": 2, "hset": 2}  # each reservation, each budget
        assert (await be.read("team:a"), await be.read("org:b")) == (
            {"ut": 200, "un": 0, "rt": 0, "rn": 0},
        ) * 2
