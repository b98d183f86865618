"""Cost of budgets and the shared rate limiter per model call, on Redis; and the limiter's fairness.

A one-step reply (one model call to a local OpenAI-compatible HTTP server) with no governor, and the
same reply with a team budget and a rate limit (high enough never to make it wait): one Redis
script before the call (reserve on the budget and take the turn, ``ADMIT``) and one after (settle,
``FINISH``) = two round trips (before issue 27's change: reserve, acquire and settle, three). The
two are interleaved round by round. Fairness: a team of 6 agents and a team of 1 share a 600 rpm limit
from two processes; the counts the server saw per team. Run: ``python -m bench.usage_overhead``.
"""

from __future__ import annotations

import itertools
import statistics
import tempfile
import time
import uuid

import anyio

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.agent.config import ReActConfig
from agentscope_teams.agent.react import ReActAgent
from agentscope_teams.model.openai import OpenAIChatModel
from agentscope_teams.state import AgentState
from agentscope_teams.store import store_from_url
from agentscope_teams.usage import Budget, RateLimit, UsageGovernor, add_budget
from tests.usage.provider import FakeProvider
from tests.usage.workers import Job, run_processes

from .fixtures import REDIS_URL


async def overhead(harness: bool, rounds: int = 15, ops: int = 20) -> tuple[float, float, float]:
    """(plain, governed, median ratio): a bare loop reply, or ``harness``: a HarnessAgent call on
    Redis (session load, lease, save) with a session budget."""
    with FakeProvider() as provider, tempfile.TemporaryDirectory() as tmp:
        async with store_from_url(REDIS_URL) as store:
            model = OpenAIChatModel("bench", base_url=provider.base_url, api_key="k", max_retries=0)
            config = ReActConfig(stream_model=False)
            agent = ReActAgent("b", model, config=config)
            gov = UsageGovernor(store, rate_limit=RateLimit(requests_per_minute=1e7))
            team = Budget(max_tokens=10**12)
            name = "team:bench-" + uuid.uuid4().hex[:6]
            options = {"store": store, "workspace": tmp, "builtin_tools": False, "config": config}
            lead = HarnessAgent("p", model, **options)  # type: ignore[arg-type]
            governed_lead = HarnessAgent("g", model, usage=gov, **options)  # type: ignore[arg-type]
            run = "bench-" + uuid.uuid4().hex[:6]
            sessions = itertools.count()

            def fresh() -> RuntimeContext:  # a new session each call: every call is one step
                return RuntimeContext(session_id=f"{run}-{next(sessions)}")

            async def plain() -> None:
                if harness:
                    await lead.call("hi", fresh())
                else:
                    await agent.reply("hi", AgentState(session_id="s"))

            async def governed() -> None:
                with gov.bind(), add_budget(name, team):
                    if harness:
                        await governed_lead.call("hi", fresh())
                    else:
                        await agent.reply("hi", AgentState(session_id="s"))

            base: list[float] = []
            gated: list[float] = []
            for _ in range(rounds):
                for op, out in ((plain, base), (governed, gated)):
                    start = time.perf_counter()
                    for _ in range(ops):
                        await op()
                    out.append((time.perf_counter() - start) / ops)
            await model.aclose()
    b, g = statistics.median(base), statistics.median(gated)
    ratios = [x / y for x, y in zip(gated, base, strict=True)]
    return b, g, statistics.median(ratios)


def fairness() -> dict[str, int]:
    limit = RateLimit(requests_per_minute=600, margin=0.0, max_wait=60)
    model = "fair-" + uuid.uuid4().hex[:6]
    with FakeProvider() as provider:
        noisy = Job(REDIS_URL, provider.base_url, model, agents=6, rate_limit=limit, tenant="noisy")
        quiet = Job(REDIS_URL, provider.base_url, model, agents=1, rate_limit=limit, tenant="quiet")
        run_processes([noisy, quiet], stop_when=lambda: len(provider.ok_times) >= 100)
        return dict(provider.tenants)


def main() -> None:
    print("| one-step call (local HTTP provider) | plain | + budget + limiter (Redis) | ratio |")
    print("|---|---|---|---|")
    for harness, what in ((False, "ReActAgent.reply (loop only)"), (True, "HarnessAgent.call")):
        b, g, r = anyio.run(overhead, harness)
        print(
            f"| {what} | {b * 1e3:.2f} ms | {g * 1e3:.2f} ms | {r:.3f} (+{(r - 1) * 100:.1f} %) |"
        )
    counts = fairness()
    total = sum(counts.values())
    print(f"\nfairness, 600 rpm shared, 6 agents vs 1 agent: {counts} "
          f"(quiet team {counts.get('quiet', 0) / total:.0%} of {total} calls)")  # fmt: skip


if __name__ == "__main__":
    main()
