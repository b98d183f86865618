"""The cost of a governed call's ``ADMIT`` and ``FINISH`` on Redis does not grow with the calls in
flight or the tenants: with 300 reservations, leases and tenants on one budget and limiter they run
the commands they run with one, and no ``HGETALL``; a hash is read whole only when something in it
may have ended, so expired reservations and leases of a dead process never refuse a call or make it
wait, a stale tenant leaves the fair share as soon as before, and a hash written before these
counts is read whole once and then kept. Commands are counted by a private ``redis-server``
(``INFO commandstats`` counts the commands a script runs)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from agentscope_teams.store import RedisStore
from agentscope_teams.usage import redis_lua, rules
from agentscope_teams.usage.backend import RedisUsage, usage_backend
from agentscope_teams.usage.rules import Admission, Limit, Rates

from .test_riders import private  # noqa: F401  (the private redis-server fixture)

pytestmark = pytest.mark.anyio
IN_FLIGHT = 300
#: A budget and a limiter that never refuse or make these calls wait (a requests limit slow enough
#: that no tenant goes stale while the test runs: 3 intervals = 30 s at least).
BUDGET = Limit("team:t", 10**12, None)
RATES = Rates(rpm=6, concurrent=1000, burst=1000)


async def _counts(client: Any) -> dict[str, int]:
    stats = await client.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


class Commands:
    """The commands the server ran (scripts' commands included) since the last :meth:`take`."""

    def __init__(self, client: Any) -> None:
        self.client, self.last = client, {}

    async def take(self) -> dict[str, int]:
        now = await _counts(self.client)
        ran = {k: n - self.last.get(k, 0) for k, n in now.items() if k != "info"}
        self.last = now
        return {k: n for k, n in ran.items() if n}


def _call(
    tenant: str, limits: tuple[Limit, ...] = (BUDGET,), rates: Rates = RATES, tokens: int = 10
) -> Admission:
    return Admission(limits, uuid.uuid4().hex, tokens, 0, "p|m|k", rates, tenant)


async def _one_call(be: Any, commands: Commands) -> tuple[dict[str, int], dict[str, int]]:
    """The commands of one new tenant's ``ADMIT`` and of its ``FINISH``."""
    a = _call("me-" + uuid.uuid4().hex[:6])
    await commands.take()
    assert await be.admit(a) == rules.GRANTED
    admit = await commands.take()
    await be.finish(a, 5, 0)
    return admit, await commands.take()


async def test_admit_and_finish_run_the_same_commands_with_300_calls_in_flight(
    private: str,  # noqa: F811
) -> None:
    async with RedisStore(private) as store:
        client: Any = aioredis.from_url(private)
        try:
            be, commands = usage_backend(store), Commands(client)
            await _one_call(be, commands)  # the scripts loaded
            assert await be.admit(_call("first")) == rules.GRANTED
            alone = await _one_call(be, commands)
            for i in range(IN_FLIGHT):  # each a tenant of its own, holding a reservation and lease
                assert await be.admit(_call(f"t{i}")) == rules.GRANTED
            crowded = await _one_call(be, commands)
            doc = await be.read(BUDGET.name)
        finally:
            await client.aclose()
    assert doc is not None and doc["rt"] == 10 * (IN_FLIGHT + 1)
    assert crowded == alone
    admit, finish = crowded
    assert "hgetall" not in admit and "hgetall" not in finish
    assert admit["hmget"] == 2 and finish["hmget"] == 1  # the budget and limiter; the budget


async def _server_ms(client: Any) -> int:
    secs, micros = await client.time()
    return int(secs) * 1000 + int(micros) // 1000


async def test_a_dead_process_reservations_and_leases_expire_without_refusing(
    private: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """300 live calls hold part of a budget and of a concurrency limit, a process that died holds
    the rest (its reservations and leases expire in 1.5 s here): a call is refused, and told to
    wait, without reading either hash whole; once they expired it is admitted, the budget and the
    limiter read whole once, then not again."""
    budget = Limit("team:d", 3000 + 700, None)
    rates = Rates(concurrent=IN_FLIGHT + 10)
    async with RedisStore(private) as live_store, RedisStore(private) as dead_store:
        client: Any = aioredis.from_url(private)
        try:
            live, commands = usage_backend(live_store), Commands(client)
            for i in range(IN_FLIGHT):
                assert await live.admit(_call(f"t{i}", (budget,), rates)) == rules.GRANTED
            monkeypatch.setattr(rules, "RESERVATION_TTL_MS", 1500)
            dead = RedisUsage(dead_store)  # its reservations and leases end in 1.5 s
            for _ in range(10):
                assert await dead.admit(_call("dead", (budget,), rates, 70)) == rules.GRANTED
            monkeypatch.undo()
            await commands.take()
            refused = await live.admit(_call("x", (budget,), rates))
            waits = await live.admit(_call("x", (), rates))
            held = await commands.take()
            await anyio.sleep(1.6)
            admitted = await live.admit(_call("x", (budget,), rates))
            expired = await commands.take()
            again = await live.admit(_call("x", (budget,), rates))
            after = await commands.take()
            doc = await live.read(budget.name)
        finally:
            await client.aclose()
    assert refused.refusal is not None and refused.refusal.settled == 0  # held by calls in flight
    assert waits.refusal is None and waits.wait_ms > 0
    assert "hgetall" not in held
    assert admitted == rules.GRANTED and expired["hgetall"] == 2  # the budget and the limiter
    assert again == rules.GRANTED and "hgetall" not in after
    assert doc == {"ut": 0, "un": 0, "rt": 10 * (IN_FLIGHT + 2), "rn": 0}


async def test_a_stale_tenant_leaves_the_fair_share_as_soon_as_before(
    private: str,  # noqa: F811
) -> None:
    """600 requests a minute (one each 100 ms), tenants A (one turn) and B (a turn each 0.25 s):
    B's own clock moves by 2 intervals a turn while A was seen within the window (1 s: 3 intervals
    x 2 tenants, at least 1 s; by the server's clock), by 1 from B's first turn after it, A
    forgotten then; only that turn reads the limiter whole."""
    rates = Rates(rpm=600, burst=10)
    turns: list[tuple[float, bool, bool]] = []  # B's clock moved, A stale by then, read whole
    async with RedisStore(private) as store:
        client: Any = aioredis.from_url(private)
        try:
            be, commands = usage_backend(store), Commands(client)
            key = be._limiter("p|m|k")
            assert await be.admit(_call("A", (), rates)) == rules.GRANTED
            a_seen = float((await client.hget(key, "t:A")).split()[1])
            await commands.take()
            while not turns or not turns[-1][1]:
                assert await be.admit(_call("B", (), rates)) == rules.GRANTED
                tat, seen = map(float, (await client.hget(key, "t:B")).split())
                read = "hgetall" in await commands.take()
                turns.append((tat - seen, a_seen < seen - 1000, read))
                await anyio.sleep(0.25)
            a_kept = await client.hexists(key, "t:A")
        finally:
            await client.aclose()
    assert [moved for moved, _, _ in turns] == [200.0] * (len(turns) - 1) + [100.0]
    assert [read for _, _, read in turns] == [False] * (len(turns) - 1) + [True]
    assert len(turns) >= 2 and not a_kept


async def test_a_hash_written_before_the_counts_is_read_whole_once(
    private: str,  # noqa: F811
) -> None:
    """A budget and a limiter as the scripts before the counts wrote them (no ``s:``, ``nt``,
    ``sx``, ``so``), holding an expired reservation, an expired lease and a stale tenant: the first
    ``ADMIT`` reads each whole, drops those and admits (counting them it would refuse, then wait);
    the next reads neither whole and counts the live lease and its own."""
    budget = Limit("team:old", 1000, None)
    rates = Rates(rpm=60, concurrent=2, burst=100)
    async with RedisStore(private) as store:
        client: Any = aioredis.from_url(private)
        try:
            be, commands = usage_backend(store), Commands(client)
            bkey, lkey = be._budget(budget.name), be._limiter("p|m|k")
            now = await _server_ms(client)
            live, gone = now + 600_000, now - 1
            await client.hset(bkey, mapping={"ut": 100, "un": 0, "rt": 900, "rn": 0,
                                              "r:live": f"400 0 {live}", "r:gone": f"500 0 {gone}"})  # fmt: skip
            await client.hset(lkey, mapping={"tat": now - 10, "px": now, "last": "1000 1000 0 x",
                                              "t:live": f"{now} {now - 10}", "t:stale": f"0 {now - 60_000}",
                                              "l:live": live, "l:gone": gone})  # fmt: skip
            await commands.take()
            first = await be.admit(_call("live", (budget,), rates))
            migrated = await commands.take()
            second = await be.admit(_call("live", (budget,), rates))
            kept = await commands.take()
            fields = set(await client.hkeys(lkey)) | set(await client.hkeys(bkey))
            doc = await be.read(budget.name)
        finally:
            await client.aclose()
    assert first == rules.GRANTED and migrated["hgetall"] == 2
    assert second.refusal is None and second.wait_ms > 0  # l:live and the first call's lease
    assert "hgetall" not in kept
    assert doc == {"ut": 100, "un": 0, "rt": 410, "rn": 0}
    assert {b"s:", b"nt", b"sx", b"so", b"t:live"} <= fields
    assert not {b"r:gone", b"l:gone", b"t:stale"} & fields


async def test_an_admit_from_before_the_counts_shares_the_hashes(
    private: str,  # noqa: F811
) -> None:
    """During an upgrade: the ``ADMIT`` of the release before the counts (its script as it was,
    ``admit_before_counts.lua``) runs on the hashes this one keeps, and what it reserves and leases
    this one counts: the budget refuses with it counted, the concurrency limit waits for its lease
    and admits once it ended."""
    own = (Path(__file__).parent / "admit_before_counts.lua").read_text()
    before = redis_lua._NOW + redis_lua._HELPERS + redis_lua._ARGS + own  # the shared prelude
    budget, rates = Limit("team:u", 25, None), Rates(concurrent=3)
    async with RedisStore(private) as store:
        be: Any = usage_backend(store)
        old = store.register_script(before)
        first, second = _call("t", (budget,), rates), _call("t", (budget,), rates)
        assert await be.admit(first) == rules.GRANTED
        assert await store.run_script(old, be._keys(second), be._args(second)) == [0, b"0"]
        assert await be.admit(_call("t", (budget,), rates)) == rules.GRANTED
        refused = await be.admit(_call("t", (budget,), rates))
        waits = await be.admit(_call("t", (), rates))
        await be.finish(second, 10, 0)
        admitted = await be.admit(_call("t", (), rates))
    assert refused.refusal is not None and refused.refusal.used == 30
    assert waits.wait_ms > 0 and admitted == rules.GRANTED
