"""What a governed call's ``ADMIT`` and ``FINISH`` cost with 1, 100 and 1,000 calls in flight on
one budget and limiter (each held call its own tenant, holding a reservation and a lease), per
store: Redis, PostgreSQL, MariaDB and the file store. One budget and limiter per level, measured
interleaved round by round (a round: ``ops`` calls admitted and finished one after the other); the
ratio 1,000 vs 1 in flight is the target (<= 1.5x on PostgreSQL and MariaDB). Run:
``python -m bench.usage_in_flight [redis|postgres|mariadb|file ...]``, or as the
``usage_in_flight`` section of ``python -m bench`` (``--fast``: 1 / 10 / 30 in flight, file and
Redis only). SQL tables get a table prefix of their own, dropped at the end."""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio

from agentscope_teams.store import BaseStore, JsonFileStore, RedisStore, SqlStore
from agentscope_teams.usage.backend import usage_backend
from agentscope_teams.usage.rules import Admission, Limit, Rates

from .fixtures import MYSQL_URL, POSTGRES_URL, REDIS_URL, drop_redis_namespace
from .stats import ms, section, table, verdict

HEAD = ["store", "in flight", "ADMIT ms", "FINISH ms", "ADMIT vs 1", "FINISH vs 1"]
#: Limits that never refuse nor make a call wait (tenants stay active for hours at 6/min).
RATES = Rates(rpm=6, concurrent=10**6, burst=10**6)
SQL_TARGET = 1.5
#: Rounds run before measuring (every pooled connection has prepared and planned the statements).
WARMUP = 4


def _call(budget: Limit, key: str, tenant: str) -> Admission:
    return Admission((budget,), uuid.uuid4().hex, 10, 0, key, RATES, tenant)


@contextlib.asynccontextmanager
async def _store(name: str, tmp: str) -> AsyncIterator[BaseStore]:
    tag = uuid.uuid4().hex[:6]
    if name == "redis":
        async with RedisStore(REDIS_URL, namespace=f"bif{tag}") as store:
            yield store
        await drop_redis_namespace(f"bif{tag}")
    elif name == "file":
        async with JsonFileStore(f"{tmp}/{tag}") as store:
            yield store
    else:
        url = POSTGRES_URL if name == "postgres" else MYSQL_URL
        async with SqlStore(url, table_prefix=f"bif{tag}_") as store:
            yield store
            await _drop(store)


async def _drop(store: SqlStore) -> None:
    """Drop the tables of ``store``'s table prefix (bench tables only)."""
    from sqlalchemy import text

    from agentscope_teams.usage.sql_docs import USAGE_TABLES

    prefix = store.tables(USAGE_TABLES)["usage_doc"].name.removesuffix("usage_doc")
    like = "table_name LIKE :p" + (
        " AND table_schema = DATABASE()" if store.dialect == "mysql" else ""
    )

    async def run(conn: Any) -> None:
        query = f"SELECT table_name FROM information_schema.tables WHERE {like}"
        names = (await conn.execute(text(query), {"p": prefix + "%"})).scalars().all()
        for t in names:
            await conn.execute(text(f"DROP TABLE IF EXISTS {t}"))

    await store.transaction("drop bench tables", run, write=True)


async def measure(name: str, levels: list[int], ops: int, rounds: int) -> list[list[str]]:
    """Rows of the table for store ``name``: median ADMIT and FINISH per level."""
    with tempfile.TemporaryDirectory() as tmp:
        async with _store(name, tmp) as store:
            be = usage_backend(store)
            tag = uuid.uuid4().hex[:6]
            pairs = {n: (Limit(f"team:{tag}-{n}", 10**15, None), f"p|m|{tag}-{n}") for n in levels}
            for n, (budget, key) in pairs.items():
                for i in range(n):
                    await be.admit(_call(budget, key, f"t{i}"))
            times: dict[int, tuple[list[float], list[float]]] = {n: ([], []) for n in levels}
            for r in range(
                rounds + WARMUP
            ):  # warm-up rounds, then rotated like bench.stats.compare
                for n in levels[r % len(levels) :] + levels[: r % len(levels)]:
                    budget, key = pairs[n]
                    admit, finish = 0.0, 0.0
                    for _ in range(ops):
                        a = _call(budget, key, "me")
                        t0 = time.perf_counter()
                        await be.admit(a)
                        t1 = time.perf_counter()
                        await be.finish(a, 5, 0)
                        admit, finish = admit + t1 - t0, finish + time.perf_counter() - t1
                    if r >= WARMUP:
                        times[n][0].append(admit / ops)
                        times[n][1].append(finish / ops)
    medians = {n: (statistics.median(a), statistics.median(f)) for n, (a, f) in times.items()}
    base = medians[levels[0]]
    return [
        [name, f"{n:,}", ms(a), ms(f), f"{a / base[0]:.2f}x", f"{f / base[1]:.2f}x"]
        for n, (a, f) in medians.items()
    ]


def _plan(fast: bool) -> tuple[list[int], int, int]:
    """(levels of calls in flight, calls per round, rounds)."""
    return ([1, 10, 30], 3, 2) if fast else ([1, 100, 1000], 20, 9)


async def rows(names: list[str], fast: bool) -> list[list[str]]:
    levels, ops, rounds = _plan(fast)
    out = []
    for name in names:
        out += await measure(name, levels, ops=ops, rounds=rounds)
    return out


async def run(fast: bool) -> str:
    """The ``usage_in_flight`` section of ``python -m bench``."""
    load = os.getloadavg()[0]
    names = ["redis", "file"] if fast else ["redis", "postgres", "mariadb", "file"]
    found = await rows(names, fast)
    levels, ops, rounds = _plan(fast)
    top = [r for r in found if r[0] in ("postgres", "mariadb") and r[1] == f"{levels[-1]:,}"]
    worst = max([float(r[4][:-1]) for r in top] + [0.0])
    return section(
        "Usage steps with calls in flight",
        "A governed call's ADMIT and FINISH on one budget and limiter holding "
        f"{', '.join(f'{n:,}' for n in levels)} calls in flight (each its own tenant, with a "
        f"reservation and a lease); median of {rounds} rounds of {ops} calls after {WARMUP} "
        f"warm-up rounds, levels interleaved; load average {load:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at end.",
        table(HEAD, found),
        [
            f"ADMIT with {levels[-1]:,} in flight <= {SQL_TARGET}x 1 in flight on PostgreSQL and "
            f"MariaDB (worst {worst:.2f}x): "
            + ("not measured (fast)" if fast else verdict(worst <= SQL_TARGET))
        ],
    )


def main() -> None:
    wanted = sys.argv[1:] or ["redis", "postgres", "mariadb", "file"]
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(table(HEAD, anyio.run(rows, wanted, False)))
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
