"""Cost of budgets and the shared rate limiter per model call, on Redis; and the limiter's fairness.

A one-step reply (one model call to a local OpenAI-compatible HTTP server) with no governor, and the
same reply with a team budget and a rate limit (high enough never to make it wait): one Redis
script before the call (reserve on the budget and take the turn, ``ADMIT``) and one after (settle,
``FINISH``) = two round trips (before issue 27's change: reserve, acquire and settle, three).
``FINISH`` is measured awaited in line (as until h-usage2) and run beside the call's next work (now:
:mod:`agentscope_teams.usage.settles`). A ``HarnessAgent.call`` sends its ``ADMIT`` beside its
session lease and load (:mod:`agentscope_teams.usage.early`; the section says how many of those
early admissions the requests took). A fourth variant answers the two scripts in Python, sending
nothing (:mod:`.usage_null`): the governor's own Python, so the table splits the overhead into it
and the scripts' round trips. The provider is a process of its own that keeps its connection
alive (:mod:`.provider_process`), as a real provider is reached; the variants are interleaved
round by round, many short rounds, and timed on the wall clock and on the calling thread's CPU
clock. Fairness: a
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
from dataclasses import dataclass, field
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

from .fixtures import REDIS_URL, drop_redis_namespace
from .provider_process import ProviderProcess
from .stats import section, table, verdict
from .usage_null import answer_at_once

#: A SQL store to compare the one-statement steps with the locked transaction on (unset: skip).
SQL_URL = os.environ.get("USAGE_BENCH_STORE", "")


#: The variants of a governed call: the settle awaited in line before the call goes on (as until
#: h-usage2), or run beside the caller's next work (now).
SETTLES = ("in line", "beside")


def settle_in_line() -> Any:
    """The settle of every governed call awaited in line (no task to hand it to), as before."""
    return mock.patch.object(Settles, "start", lambda self, settle: None)


#: The variants, in the table's order: plain (no governor), the settle awaited in line, beside
#: (now), and the governor with its store's scripts answered in Python (:mod:`.usage_null`).
VARIANTS = ("plain", "in line", "beside", "governor only")


@dataclass
class Timings:
    """Seconds per call of one variant, one entry per round: wall clock and the calling thread's
    CPU (``time.thread_time``)."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


async def overhead(harness: bool, rounds: int = 150, ops: int = 4) -> dict[str, Timings]:
    """Wall and CPU seconds per call, one entry per round, of each of :data:`VARIANTS`, the
    variants interleaved round by round (each round starting with the next one, so a load spike
    hits each alike): a bare loop reply, or ``harness``: a HarnessAgent call (session load,
    lease, save). The provider runs in a process of its own, keeping its connection alive
    (:mod:`.provider_process`); the sessions live in a namespace of their own, dropped after (a
    session index grown by earlier runs would slow every plain call's first save)."""
    space = {"namespace": f"bench-usage-{uuid.uuid4().hex[:8]}"}  # sessions of its own, dropped
    try:
        return await _overhead(harness, rounds, ops, space)
    finally:
        await drop_redis_namespace(space["namespace"])


async def _overhead(
    harness: bool, rounds: int, ops: int, space: dict[str, str]
) -> dict[str, Timings]:
    with ProviderProcess() as provider, tempfile.TemporaryDirectory() as tmp:
        async with (
            store_from_url(REDIS_URL, **space) as store,
            store_from_url(REDIS_URL, **space) as null_store,
        ):
            model = OpenAIChatModel("bench", base_url=provider.base_url, api_key="k", max_retries=0)
            config = ReActConfig(stream_model=False)
            agent = ReActAgent("b", model, config=config)
            limit = RateLimit(requests_per_minute=1e7, burst=1000)
            gov, null_gov = (
                UsageGovernor(store, rate_limit=limit),
                UsageGovernor(null_store, rate_limit=limit),
            )
            answer_at_once(null_gov.backend)
            team = Budget(max_tokens=10**12)
            name = "team:bench-" + uuid.uuid4().hex[:6]
            options = {"store": store, "workspace": tmp, "builtin_tools": False, "config": config}
            lead = HarnessAgent("p", model, **options)  # type: ignore[arg-type]
            governed_lead = HarnessAgent("g", model, usage=gov, **options)  # type: ignore[arg-type]
            null_options = {**options, "store": null_store}
            null_lead = HarnessAgent("n", model, usage=null_gov, **null_options)  # type: ignore[arg-type]
            run = "bench-" + uuid.uuid4().hex[:6]
            sessions = itertools.count()

            def fresh() -> RuntimeContext:  # a new session each call: every call is one step
                return RuntimeContext(session_id=f"{run}-{next(sessions)}")

            async def plain() -> None:
                if harness:
                    await lead.call("hi", fresh())
                else:
                    await agent.reply("hi", AgentState(session_id="s"))

            def governed_by(g: UsageGovernor, lead: HarnessAgent) -> Callable[[], Awaitable[None]]:
                async def governed() -> None:
                    with g.bind(), add_budget(name, team):
                        if harness:
                            await lead.call("hi", fresh())
                        else:
                            await agent.reply("hi", AgentState(session_id="s"))

                return governed

            governed = governed_by(gov, governed_lead)

            async def in_line() -> None:
                with settle_in_line():
                    await governed()

            variants = dict(
                zip(
                    VARIANTS,
                    (plain, in_line, governed, governed_by(null_gov, null_lead)),
                    strict=True,
                )
            )
            out = {k: Timings() for k in variants}
            for _ in range(10):
                for op in variants.values():
                    await op()  # connections open, scripts loaded, documents exist
            names = list(variants)
            for r in range(rounds):
                for k in names[r % 4 :] + names[: r % 4]:
                    wall, cpu = time.perf_counter(), time.thread_time()
                    for _ in range(ops):
                        await variants[k]()
                    out[k].wall.append((time.perf_counter() - wall) / ops)
                    out[k].cpu.append((time.thread_time() - cpu) / ops)
            await model.aclose()
    return out


def _ratio(out: dict[str, Timings], k: str, clock: str = "wall") -> float:
    """The median of the per-round ratios of variant ``k`` to ``plain`` on ``clock``."""
    mine, plain = (
        (out[k].wall, out["plain"].wall) if clock == "wall" else (out[k].cpu, out["plain"].cpu)
    )
    return statistics.median(x / y for x, y in zip(mine, plain, strict=True))


def _cell(out: dict[str, Timings], k: str) -> str:
    wall, cpu = _ratio(out, k), _ratio(out, k, "cpu")
    return f"{wall:.3f} ({(wall - 1) * 100:+.1f} %; CPU {(cpu - 1) * 100:+.1f} %)"


async def overhead_rows(rounds: int, ops: int) -> list[list[str]]:
    rows = []
    for harness, what in ((False, "ReActAgent.reply (loop only)"), (True, "HarnessAgent.call")):
        out = await overhead(harness, rounds, ops)
        ms = {k: f"{statistics.median(v.wall) * 1e3:.2f} ms" for k, v in out.items()}
        cells = [_cell(out, k) for k in VARIANTS[1:]]
        rows.append([what, ms["plain"], ms["in line"], ms["beside"], *cells])
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
    "governor only / plain",
]


async def run(fast: bool) -> str:
    """The ``usage_overhead`` section of ``python -m bench`` (``fast``: 2 rounds of 3 calls and a
    fairness run of a dozen calls, which checks the harness only)."""
    load = os.getloadavg()[0]
    rounds, ops, calls = (2, 3, 12) if fast else (150, 4, 100)
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
        "it returns); and the governor with the two scripts answered in Python, sending nothing "
        "(governor only: its own Python). The provider is a process of its own keeping its "
        "connection alive (before the fifth session of issue 27 it ran in the bench's process, "
        "a new connection and server thread per call). "
        f"Interleaved, {rounds} rounds of {ops} calls, ratios are the median of the per-round "
        "ratios of wall time (and of the calling thread's CPU time); load average "
        f"{load:.1f} at start, {os.getloadavg()[0]:.1f} at end.",
        table(HEAD, rows),
        [
            "HarnessAgent.call with budget + limiter < 5 % over plain: "
            + verdict(_ratio_of(rows[1][-2]) < 1.05, rows[1][-2]),
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
