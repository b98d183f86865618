"""The Lua scripts of a Redis store decide as :mod:`agentscope_teams.usage.rules` does (run here on
the memory store): two budgets (the second refusing in dollars), a concurrency cap, a token bucket,
a settle that corrects reservations to use, a tenant name with a space in it, turns given back
(undone while the last one taken, kept after another), and concurrent slots freed by a settle and a
give-back while tenants join on a turn and on a wait (the scripts count leases and tenants instead
of reading every one)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agentscope_teams.store import BaseStore
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.usage.backend import usage_backend
from agentscope_teams.usage.rules import Admission, Limit, Rates

from ..backends import StoreSpec

pytestmark = pytest.mark.anyio


async def _story(store: BaseStore, tag: str) -> list[Any]:
    be = usage_backend(store)
    tokens_budget, usd_budget = f"team:{tag}-a", f"team:{tag}-b"
    limits = (Limit(tokens_budget, 1000, None), Limit(usd_budget, None, 500))
    rates = Rates(rpm=1e6, tpm=6000, concurrent=2, burst=5)

    def call(tokens: int, nanos: int) -> Admission:
        return Admission(limits, uuid.uuid4().hex, tokens, nanos, f"p|{tag}|k", rates, "org/a b")

    first, second, third = call(300, 200), call(300, 200), call(300, 200)
    seen: list[Any] = [await be.admit(first), await be.admit(second)]
    capped = await be.admit(third)  # two leases held: wait for a turn, no refusal
    seen.append((capped.wait_ms > 0, capped.refusal))
    await be.finish(first, 100, 150)
    await be.finish(second, 500, 400)
    for name in (tokens_budget, usd_budget):
        doc = await be.read(name)
        assert doc is not None
        seen.append({k: doc[k] for k in ("ut", "un", "rt", "rn")})
    seen.append(await be.admit(call(10, 10)))  # 550 of 500 nano-dollars: the second refuses
    bucket = (Limit(f"team:{tag}-c", 10**9, None),)
    for _ in range(2):  # 100 tokens at 60/min: the first passes, the second waits
        a = Admission(bucket, uuid.uuid4().hex, 100, 0, f"p|{tag}|t", Rates(tpm=60), "t")
        seen.append((await be.admit(a)).wait_ms > 0)
    seen += await _given_back(store, tag)
    seen += await _slots(store, tag)
    return seen


async def _given_back(store: BaseStore, tag: str) -> list[bool]:
    """Whether each of four turns of a bucket of two (one a second) waits: the first is given back
    while it is the last turn taken (undone), the second after the third came (kept)."""
    be, waits = usage_backend(store), []
    turns = [
        Admission((), f"{tag}-{i}", 1, 0, f"p|{tag}|r", Rates(rpm=60, burst=2), "r")
        for i in range(4)
    ]
    for i, a in enumerate(turns):
        waits.append((await be.admit(a)).wait_ms > 0)
        if i in (0, 2):
            await be.give_back(turns[0 if i == 0 else 1])
    return waits


async def _slots(store: BaseStore, tag: str) -> list[bool]:
    """Whether each call of a limiter of two concurrent slots waits, each a tenant of its own but
    the second (a and b hold the slots; c waits, joining the tenants, and gets the slot a's settle
    frees; b's turn is given back, d gets its slot; e waits)."""
    be, waits = usage_backend(store), []
    rates = Rates(rpm=1e6, concurrent=2, burst=1000)
    calls = {t: Admission((), f"{tag}-{t}", 1, 0, f"p|{tag}|c", rates, t) for t in "abcde"}
    calls["b"] = calls["b"]._replace(tenant="a")
    for t, ends in (("a", None), ("b", None), ("c", "a"), ("c", "b"), ("d", None), ("e", None)):
        waits.append((await be.admit(calls[t])).wait_ms > 0)
        if ends == "a":
            await be.finish(calls["a"], 1, 0)
        elif ends == "b":
            await be.give_back(calls["b"])
    return waits


@pytest.mark.parametrize("store_spec", ["redis"], indirect=True)
async def test_the_redis_scripts_decide_as_the_rules(
    store: BaseStore, store_spec: StoreSpec
) -> None:
    tag = uuid.uuid4().hex[:8]
    on_redis = await _story(store, tag)
    assert on_redis == await _story(InMemoryStore(), tag)
    assert on_redis[3] == {"ut": 600, "un": 550, "rt": 0, "rn": 0}
    assert on_redis[5].refusal.name == f"team:{tag}-b"
    assert on_redis[2][0] and on_redis[-12:-10] == [False, True]
    assert on_redis[-10:-6] == [False, False, False, True]
    assert on_redis[-6:] == [False, False, True, False, False, True]
