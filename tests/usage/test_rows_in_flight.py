"""On the SQL stores a governed call's ``ADMIT`` and ``FINISH`` cost the same with 300 calls in
flight (each its own tenant, holding a reservation and a lease) as with one: the same statements,
the same rows touched (PostgreSQL: written, as its statement reports; MariaDB and SQLite: read and
written, as the driver reports), and heads of the same size (counted in JSON values: the
reservations, leases and tenants are rows, not maps in the head). And what a dead process left
(reservations and leases past their expiry) never refuses a call: the next call gets through and
drops it (a stale tenant leaving the fair share is in ``test_pg_agreement.py``)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from sqlalchemy import event, text

from agentscope_teams.store import BaseStore
from agentscope_teams.usage import backend as usage_backends
from agentscope_teams.usage import rules
from agentscope_teams.usage.backend import UsageBackend, usage_backend
from agentscope_teams.usage.docs import doc_id
from agentscope_teams.usage.rules import Admission, Limit, Rates
from agentscope_teams.usage.sql_pg import PgUsage

from ..teams.round_trips import count_round_trips

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.parametrize("store_spec", ["postgres", "mariadb", "sqlite"], indirect=True),
]
IN_FLIGHT = 300
#: Limits that never refuse nor make these calls wait (tenants stay active for minutes at 6/min).
RATES = Rates(rpm=6, concurrent=10**6, burst=10**6)
NOW = 10_000_000


def _call(budget: Limit, key: str, tenant: str, tokens: int = 10) -> Admission:
    return Admission((budget,), uuid.uuid4().hex, tokens, 0, key, RATES, tenant)


async def _admit(be: UsageBackend, a: Admission, now: int) -> rules.Admitted:
    return await be.admit_at(a, now) if isinstance(be, PgUsage) else await be.admit(a)


async def _finish(be: UsageBackend, a: Admission, now: int) -> None:
    if isinstance(be, PgUsage):
        await be.finish_at(a, 5, 0, now)
    else:
        await be.finish(a, 5, 0)


@asynccontextmanager
async def _rows_touched(store: BaseStore) -> AsyncIterator[list[int]]:
    """The rows each statement sent in the block read or wrote, as the driver counts them."""
    seen: list[int] = []
    engine = store._engine.sync_engine  # type: ignore[attr-defined]

    def after(conn: Any, cursor: Any, statement: str, params: Any, *rest: Any) -> None:
        seen.append(max(cursor.rowcount, 0))

    event.listen(engine, "after_cursor_execute", after)
    try:
        yield seen
    finally:
        event.remove(engine, "after_cursor_execute", after)


def _values(doc: Any) -> int:
    """The JSON values in ``doc``, nested ones included."""
    if isinstance(doc, dict):
        return 1 + sum(_values(v) for v in doc.values())
    if isinstance(doc, list):
        return 1 + sum(_values(v) for v in doc)
    return 1


async def _head_values(store: BaseStore, be: UsageBackend, names: list[str]) -> list[int]:
    table = be.docs.table  # type: ignore[attr-defined]
    stmt = text(f"SELECT doc FROM {table} WHERE id = :id")

    async def run(conn: Any) -> list[int]:
        return [
            _values(json.loads((await conn.execute(stmt, {"id": doc_id(n)})).scalar_one()))
            for n in names
        ]

    return list(await store.transaction("read heads", run))


async def _one_call(store: BaseStore, be: UsageBackend, budget: Limit, key: str) -> list[Any]:
    """What a new tenant's ADMIT and FINISH cost: statements, rows, head sizes after each."""
    a = _call(budget, key, "me-" + uuid.uuid4().hex[:6])
    cost: list[Any] = []
    for step in ("admit", "finish"):
        async with count_round_trips(store) as trips, _rows_touched(store) as rows:
            if step == "admit":
                assert (await _admit(be, a, NOW + 1)).wait_ms == 0
            else:
                await _finish(be, a, NOW + 1)
        touched = getattr(be, "last_written", None) if isinstance(be, PgUsage) else sum(rows)
        heads = await _head_values(store, be, [budget.name, key])
        cost.append((step, trips.seen, touched, heads))
    return cost


async def test_a_call_costs_the_same_with_300_calls_in_flight_as_with_one(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(usage_backends, "now_ms", lambda: NOW + 1)
    be = usage_backend(store)
    tag = uuid.uuid4().hex[:6]
    costs = []
    for n in (1, IN_FLIGHT):
        budget, key = Limit(f"team:{tag}-{n:03d}", 10**12, None), f"p|m|{tag}-{n:03d}"
        for i in range(n):
            assert (await _admit(be, _call(budget, key, f"t{i:03d}"), NOW)).refusal is None
        await _one_call(store, be, budget, key)  # statements prepared, rows of "me-" present
        costs.append(await _one_call(store, be, budget, key))
    assert costs[0] == costs[1]
    doc = await be.read(f"p|m|{tag}-{IN_FLIGHT:03d}")  # read still assembles the whole document
    assert doc is not None and len(doc["lease"]) == doc["nlease"] == IN_FLIGHT
    assert len(doc["ten"]) == doc["nten"] == IN_FLIGHT + 2


async def test_what_a_dead_process_left_never_refuses_a_call(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 reservations fill the budget and 300 leases every slot, then their process dies: once
    they expire the next call is admitted, and what they held is dropped."""
    be = usage_backend(store)
    tag = uuid.uuid4().hex[:6]
    budget, key = Limit(f"team:{tag}", 10 * IN_FLIGHT, None), f"p|m|{tag}"
    rates = Rates(concurrent=IN_FLIGHT)
    monkeypatch.setattr(usage_backends, "now_ms", lambda: NOW)
    for i in range(IN_FLIGHT):
        a = Admission((budget,), f"dead{i}", 10, 0, key, rates, f"t{i}")
        assert await _admit(be, a, NOW) == rules.GRANTED
    late = Admission((budget,), "late", 10, 0, key, rates, "t")
    assert (await _admit(be, late, NOW)).refusal is not None  # the budget is spent meanwhile
    after = NOW + rules.RESERVATION_TTL_MS
    monkeypatch.setattr(usage_backends, "now_ms", lambda: after)
    assert await _admit(be, late, after) == rules.GRANTED
    spent, limiter = await be.read(budget.name), await be.read(key)
    assert spent is not None and limiter is not None
    assert (spent["rt"], list(spent["res"])) == (10, ["late"])
    assert (limiter["nlease"], list(limiter["lease"])) == (1, ["late"])


async def test_concurrent_calls_keep_heads_and_rows_in_step(store: BaseStore) -> None:
    """40 calls at once over the store's connections, half of them one tenant's (whose row they
    all update), half a new tenant's each (inserting theirs): afterwards every reservation and
    lease has ended, the totals are what the calls used, and the counts are the rows."""
    be = usage_backend(store)
    tag = uuid.uuid4().hex[:6]
    budget, key = Limit(f"team:{tag}", 10**12, None), f"p|m|{tag}"
    rates = Rates(rpm=6, concurrent=1000, burst=1000)

    async def one(i: int) -> None:
        a = Admission((budget,), uuid.uuid4().hex, 10, 0, key, rates, "same" if i % 2 else f"t{i}")
        assert await be.admit(a) == rules.GRANTED
        await be.finish(a, 3, 0)

    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(one, i)
    spent, limiter = await be.read(budget.name), await be.read(key)
    assert spent is not None and limiter is not None
    assert (spent["ut"], spent["rt"], spent["res"]) == (120, 0, {})
    assert (limiter["nlease"], limiter["lease"]) == (0, {})
    assert limiter["nten"] == len(limiter["ten"]) == 21


async def test_concurrent_turns_of_one_new_tenant_all_count(store: BaseStore) -> None:
    """20 calls of one tenant new to a limiter, at once: each turn moves the tenant's clock by one
    interval (10 s at 6/min), none read a clock another had already moved (on PostgreSQL a
    statement that finds the tenant's row inserted since its snapshot runs again)."""
    be = usage_backend(store)
    tag = uuid.uuid4().hex[:6]
    key, rates = f"p|m|{tag}", Rates(rpm=6, burst=1000)
    before = usage_backends.now_ms()

    async def one() -> None:
        a = Admission((), uuid.uuid4().hex, 10, 0, key, rates, "same")
        assert await be.admit(a) == rules.GRANTED

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(one)
    limiter = await be.read(key)
    assert limiter is not None and limiter["nten"] == 1
    first_turn = limiter["ten"]["same"][0] - 20 * 10_000.0  # when the first turn was taken
    assert before <= first_turn <= usage_backends.now_ms()
