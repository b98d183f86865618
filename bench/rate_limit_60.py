"""The shared rate limit at a provider's real pace: 16 callers in 4 processes share a limit of 60
requests/min (the default margin) against a local provider that enforces 60/min (a token bucket of
2, 429 past it; and one of 1, a provider that allows no burst, on Redis).
Reports the 429s the provider answered and the pace it saw, per store (the test
``tests/usage/test_shared_limits.py`` runs the same at 120/min). Run:
``python -m bench.rate_limit_60 [redis|postgres|file ...]``, or as the ``rate_limit_60`` section of
``python -m bench`` (``--fast``: 2 processes x 2 callers, one call each, at 120/min on the file
store: it checks the harness, not the pace)."""

from __future__ import annotations

import os
import sys
import tempfile
import uuid

import anyio

from agentscope_teams.usage import RateLimit
from tests.usage.provider import FakeProvider
from tests.usage.workers import Job, run_processes

from .fixtures import POSTGRES_URL, REDIS_URL
from .stats import section, table, verdict

HEAD = ["store", "provider's burst", "calls", "429s", "pace seen by the provider"]


def one(
    url: str, calls: int = 2, rpm: float = 60, procs: int = 4, burst: int = 2
) -> tuple[int, float, int]:
    """(429s, requests/min the provider saw, calls made) for ``procs`` processes x 4 callers
    (2 in fewer than 4 processes) sharing a limit of ``rpm``, against a provider enforcing it
    with a token bucket of ``burst``."""
    limit = RateLimit(requests_per_minute=rpm, max_wait=120)
    model = "m-" + uuid.uuid4().hex[:8]
    agents = 4 if procs >= 4 else 2
    with FakeProvider(rate=rpm / 60, burst=burst) as provider:
        job = Job(url, provider.base_url, model, agents=agents, calls=calls, rate_limit=limit)
        results = run_processes([job] * procs, timeout=600)
    times = provider.ok_times
    rate = (len(times) - 1) / (times[-1] - times[0]) * 60 if len(times) > 1 else 0.0
    return provider.rejected, rate, sum(r["calls"] for r in results)


def rows(names: list[str], tmp: str, fast: bool) -> list[list[str]]:
    urls = {"redis": REDIS_URL, "postgres": POSTGRES_URL, "file": f"file://{tmp}/store"}
    rpm = 120 if fast else 60
    runs = [(name, 2) for name in names] + ([] if fast else [("redis", 1)])
    out = []
    for name, burst in runs:
        rejected, rate, calls = one(urls[name], 1 if fast else 2, rpm, 2 if fast else 4, burst)
        pace = f"{rate:.1f}/min ({rate / rpm - 1:+.1%})"
        out.append([name, str(burst), str(calls), str(rejected), pace])
    return out


async def run(fast: bool) -> str:
    """The ``rate_limit_60`` section of ``python -m bench``."""
    load = os.getloadavg()[0]
    names = ["file"] if fast else ["redis", "postgres", "file"]
    with tempfile.TemporaryDirectory() as tmp:
        found = await anyio.to_thread.run_sync(rows, names, tmp, fast)
    rpm = 120 if fast else 60
    return section(
        f"Shared rate limit at the provider's pace ({rpm:g} requests/min)",
        "Callers in several processes share one limit (the default margin, 5 %) against a local "
        "provider enforcing the same limit (a token bucket, 429 past it); load average "
        f"{load:.1f} at start, {os.getloadavg()[0]:.1f} at end.",
        table(HEAD, found),
        [f"no 429 at {rpm:g}/min: " + verdict(all(r[3] == "0" for r in found))],
    )


def main() -> None:
    wanted = sys.argv[1:] or ["redis", "postgres", "file"]
    with tempfile.TemporaryDirectory() as tmp:
        print(table(HEAD, rows(wanted, tmp, fast=False)))


if __name__ == "__main__":
    main()
