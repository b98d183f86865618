"""Cost of budgets and the shared rate limiter per model call, on Redis; and the limiter's fairness.

A one-step reply (one model call to a local OpenAI-compatible HTTP server) with no governor, and the
same reply with a team budget and a rate limit (high enough never to make it wait): one Redis
script before the call (reserve on the budget and take the turn, ``ADMIT``) and one after (settle,
``FINISH``) = two round trips (before issue 27's change: reserve, acquire and settle, three).
``FINISH`` is measured awaited in line (as until h-usage2) and run beside the call's next work (now:
:mod:`agentscope_teams.usage.settles`). A ``HarnessAgent.call`` sends its ``ADMIT`` beside its
session lease and load (:mod:`agentscope_teams.usage.early`; the section says how many of those
early admissions the requests took). The variants are interleaved round by round. Fairness: a
team of 6 agents and a team of 1 share a 600 rpm limit from two processes; the counts the server saw
per team. Run: ``python -m bench.usage_overhead``, or as the ``usage_overhead`` section of
``python -m bench`` (``--fast``: tiny sizes, checks the harness).

``USAGE_BENCH_STORE=postgresql://…`` (or ``mysql://…``) adds the SQL section: a governed call's two
store steps (admit and finish, a team budget and a rate limit with ``concurrent``) as PostgreSQL's
one statement each (:mod:`agentscope_teams.usage.sql_pg`) against the locked transaction each
(:mod:`agentscope_teams.usage.sql_docs`, what every SQL store did before), interleaved round by
round, alone and around a one-step ``ReActAgent.reply``.
"""

from __future__ import annotations

import itertools
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from unittest import mock

import anyio

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.agent.config import ReActConfig
from agentscope_teams.agent.react import ReActAgent
from agentscope_teams.model.openai import OpenAIChatModel
from agentscope_teams.state import AgentState
from agentscope_teams.store import store_from_url
from agentscope_teams.usage import Budget, RateLimit, UsageGovernor, add_budget, early
from agentscope_teams.usage.backend import DocsUsage, UsageBackend, usage_backend
from agentscope_teams.usage.docs import docs_for
from agentscope_teams.usage.rules import Admission, Limit, Rates
from agentscope_teams.usage.settles import Settles
from tests.usage.provider import FakeProvider
from tests.usage.workers import Job, run_processes

from .fixtures import REDIS_URL
from .stats import section, table, verdict

#: A SQL store to compare the one-statement steps with the locked transaction on (unset: skip).
SQL_URL = os.environ.get("USAGE_BENCH_STORE", "")


#: The variants of a governed call: the settle awaited in line before the call goes on (as until
#: h-usage2), or run beside the caller's next work (now).
SETTLES = ("in line", "beside")


def settle_in_line() -> Any:
    """The settle of every governed call awaited in line (no task to hand it to), as before."""
    return mock.patch.object(Settles, "start", lambda self, settle: None)


async def overhead(harness: bool, rounds: int = 15, ops: int = 20) -> dict[str, list[float]]:
    """Seconds per call, one entry per round, of: ``plain`` (no governor) and a team budget and a
    rate limit on Redis with the settle ``in line`` and ``beside``, interleaved round by round: a
    bare loop reply, or ``harness``: a HarnessAgent call (session load, lease, save)."""
    with FakeProvider() as provider, tempfile.TemporaryDirectory() as tmp:
        async with store_from_url(REDIS_URL) as store:
            model = OpenAIChatModel("bench", base_url=provider.base_url, api_key="k", max_retries=0)
            config = ReActConfig(stream_model=False)
            agent = ReActAgent("b", model, config=config)
            gov = UsageGovernor(store, rate_limit=RateLimit(requests_per_minute=1e7, burst=1000))
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

            async def in_line() -> None:
                with settle_in_line():
                    await governed()

            variants = {"plain": plain, "in line": in_line, "beside": governed}
            out: dict[str, list[float]] = {k: [] for k in variants}
            for op in variants.values():
                await op()  # connections open, scripts loaded, documents exist
            for r in range(rounds):
                names = list(variants)
                names = names[r % 3 :] + names[: r % 3]  # a load spike hits each alike
                for k in names:
                    start = time.perf_counter()
                    for _ in range(ops):
                        await variants[k]()
                    out[k].append((time.perf_counter() - start) / ops)
            await model.aclose()
    return out


def _ratio(out: dict[str, list[float]], k: str) -> float:
    """The median of the per-round ratios of variant ``k`` to ``plain``."""
    return statistics.median(x / y for x, y in zip(out[k], out["plain"], strict=True))


async def overhead_rows(rounds: int, ops: int) -> list[list[str]]:
    rows = []
    for harness, what in ((False, "ReActAgent.reply (loop only)"), (True, "HarnessAgent.call")):
        out = await overhead(harness, rounds, ops)
        ms = {k: f"{statistics.median(v) * 1e3:.2f} ms" for k, v in out.items()}
        ratios = [f"{_ratio(out, k):.3f} ({(_ratio(out, k) - 1) * 100:+.1f} %)" for k in SETTLES]
        rows.append([what, ms["plain"], ms["in line"], ms["beside"], *ratios])
    return rows


async def sql_steps(url: str, rounds: int = 15, ops: int = 20) -> dict[str, list[float]]:
    """Per-call seconds (one list entry per round) of: the two steps alone as one statement each
    (``now``) and as a locked transaction each (``before``); a one-step reply with no governor
    (``plain``), governed with each (``reply now``, ``reply before``)."""
    async with store_from_url(url) as store:
        now: UsageBackend = usage_backend(store)
        before: UsageBackend = DocsUsage(docs_for(store))
        run = uuid.uuid4().hex[:6]
        rates = Rates(rpm=1e7, burst=1000, concurrent=1000)
        limits = (Limit(f"team:bench-{run}", 10**15, None),)

        async def steps(backend: UsageBackend) -> None:
            a = Admission(limits, uuid.uuid4().hex, 100, 0, f"bench|{run}|k", rates, "t")
            await backend.admit(a)
            await backend.finish(a, 40, 0)

        with FakeProvider() as provider:
            model = OpenAIChatModel("bench", base_url=provider.base_url, api_key="k", max_retries=0)
            agent = ReActAgent("b", model, config=ReActConfig(stream_model=False))

            async def reply(backend: UsageBackend | None) -> None:
                if backend is None:
                    await agent.reply("hi", AgentState(session_id="s"))
                else:
                    await steps(backend)  # the same two steps the governor sends around it
                    await agent.reply("hi", AgentState(session_id="s"))

            variants: dict[str, Callable[[], Awaitable[None]]] = {
                "now": lambda: steps(now),
                "before": lambda: steps(before),
                "plain": lambda: reply(None),
                "reply now": lambda: reply(now),
                "reply before": lambda: reply(before),
            }
            for op in variants.values():
                await op()  # rows exist, connections are open
            out: dict[str, list[float]] = {k: [] for k in variants}
            for _ in range(rounds):
                for name, op in variants.items():
                    start = time.perf_counter()
                    for _ in range(ops):
                        await op()
                    out[name].append((time.perf_counter() - start) / ops)
            await model.aclose()
    return out


def print_sql(url: str) -> None:
    load = os.getloadavg()[0]
    out = anyio.run(sql_steps, url)
    med = {k: statistics.median(v) * 1e3 for k, v in out.items()}
    ratio = statistics.median(b / n for b, n in zip(out["before"], out["now"], strict=True))
    scheme = url.partition(":")[0]
    print(f"\n{scheme}, load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
    print("| per governed call | locked transaction per step (before) | one statement (now) |")
    print("|---|---|---|")
    print(f"| admit + finish alone | {med['before']:.2f} ms | {med['now']:.2f} ms "
          f"(before/now {ratio:.2f}) |")  # fmt: skip
    print(f"| one-step reply, plain {med['plain']:.2f} ms | {med['reply before']:.2f} ms | "
          f"{med['reply now']:.2f} ms |")  # fmt: skip


def fairness(calls: int = 100) -> dict[str, int]:
    limit = RateLimit(requests_per_minute=600, margin=0.0, max_wait=60)
    model = "fair-" + uuid.uuid4().hex[:6]
    with FakeProvider() as provider:
        noisy = Job(REDIS_URL, provider.base_url, model, agents=6, rate_limit=limit, tenant="noisy")
        quiet = Job(REDIS_URL, provider.base_url, model, agents=1, rate_limit=limit, tenant="quiet")
        run_processes([noisy, quiet], stop_when=lambda: len(provider.ok_times) >= calls)
        return dict(provider.tenants)


HEAD = [
    "one-step call (local HTTP provider)",
    "plain",
    "+ budget + limiter, settle in line",
    "settle beside (now)",
    "in line / plain",
    "beside / plain",
]


async def run(fast: bool) -> str:
    """The ``usage_overhead`` section of ``python -m bench`` (``fast``: 2 rounds of 3 calls and a
    fairness run of a dozen calls, which checks the harness only)."""
    load = os.getloadavg()[0]
    rounds, ops, calls = (2, 3, 12) if fast else (15, 20, 100)
    before = _early_counts()
    rows = await overhead_rows(rounds, ops)
    sent, taken, released = (now - then for now, then in zip(_early_counts(), before, strict=True))
    counts = await anyio.to_thread.run_sync(fairness, calls)
    total = sum(counts.values()) or 1
    return section(
        "Budgets and shared rate limits: cost per model call (Redis)",
        "A one-step call to a local OpenAI-compatible server that answers at once: no governor "
        "(plain), and with a team budget and a shared rate limit (never waiting): `ADMIT` before "
        "the request, `FINISH` after it, awaited in line (as until issue 27's h-usage2) or run "
        "beside the call's next work (the session save; the loop-only reply waits for it before "
        f"it returns). Interleaved, {rounds} rounds of {ops} calls, ratios are the median of the "
        f"per-round ratios; load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at end.",
        table(HEAD, rows),
        [
            "HarnessAgent.call with budget + limiter < 5 % over plain: "
            + verdict(_ratio_of(rows[1][-1]) < 1.05, rows[1][-1]),
            f"early admissions (HarnessAgent.call): {sent} sent, {taken} taken by their "
            f"request, {released} released",
            f"fairness, 600 rpm shared, 6 agents vs 1: {counts} (quiet team "
            f"{counts.get('quiet', 0) / total:.0%} of {total} calls)",
        ],
    )


def _early_counts() -> tuple[int, int, int]:
    c = early.Counts
    return c.sent, c.taken, c.released


def _ratio_of(cell: str) -> float:
    return float(cell.partition(" ")[0])


def main() -> None:
    if SQL_URL:
        print_sql(SQL_URL)
        return
    print(anyio.run(run, False))


if __name__ == "__main__":
    main()
