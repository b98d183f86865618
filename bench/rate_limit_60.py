"""The shared rate limit at a provider's real pace: 16 callers in 4 processes share a limit of 60
requests/min against a local provider that enforces 60/min (a token bucket of 2, 429 past it).
Reports the 429s the provider answered and the pace it saw, per store (the test
``tests/usage/test_shared_limits.py`` runs the same at 120/min). Run:
``python -m bench.rate_limit_60 [redis|postgres|file ...]``."""

from __future__ import annotations

import sys
import tempfile
import uuid

from agentscope_teams.usage import RateLimit
from tests.usage.provider import FakeProvider
from tests.usage.workers import Job, run_processes

from .fixtures import POSTGRES_URL, REDIS_URL


def one(url: str, calls: int = 2) -> tuple[int, float, int]:
    """(429s, requests/min the provider saw, calls made) for 4 processes x 4 callers."""
    limit = RateLimit(requests_per_minute=60, margin=0.02, max_wait=120)
    model = "m-" + uuid.uuid4().hex[:8]
    with FakeProvider(rate=1.0, burst=2) as provider:
        job = Job(url, provider.base_url, model, agents=4, calls=calls, rate_limit=limit)
        results = run_processes([job] * 4, timeout=600)
    times = provider.ok_times
    rate = (len(times) - 1) / (times[-1] - times[0]) * 60
    return provider.rejected, rate, sum(r["calls"] for r in results)


def main() -> None:
    wanted = sys.argv[1:] or ["redis", "postgres", "file"]
    print("| store | calls | 429s | pace seen by the provider (limit 60/min) |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        urls = {"redis": REDIS_URL, "postgres": POSTGRES_URL, "file": f"file://{tmp}/store"}
        for name in wanted:
            rejected, rate, calls = one(urls[name])
            print(f"| {name} | {calls} | {rejected} | {rate:.1f}/min ({rate / 60 - 1:+.1%}) |")


if __name__ == "__main__":
    main()
