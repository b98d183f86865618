"""1,000 concurrent ``HarnessAgent.call()`` on distinct sessions, the model awaiting 50 ms per step.

Each call is a new session: load (absent), lease (Redis), workspace, two model steps (a no-op tool
call, then the answer), a checkpoint save after the tool step and the final save. The model costs
nothing but its 50 ms wait per step (``fixtures.BareModel``), so a call alone takes about 100 ms and
everything above that is the framework. Concurrent calls overlap their waits; the target is that
1,000 of them finish within 2x the time of one call alone, on the in-memory store and on Redis.

Reported per store, as the median over runs ± interquartile spread: one call alone, the wall time of
N concurrent calls, their ratio, the process CPU per call of the N calls and of N concurrent replies
of the loop alone (same model and tools, no store) in the same runs, and their difference: the
framework's CPU per call.

``AGENTSCOPE_TEAMS_BENCH_GC_THRESHOLD=N`` sets the collector's generation-0 threshold to N (Python's
default 700) after the warm-up: the opt-in policy of ``bench/RESULTS.md`` (h-cpu2), an application's
setting, not the library's.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio

from agentscope_teams import AgentState, HarnessAgent, ReActAgent
from agentscope_teams.cli.heap import set_young_threshold, young_threshold
from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import BaseStore, store_from_url

from .fixtures import REDIS_URL, BareModel, drop_redis_namespace, noop
from .stats import Sample, fmt, ms, section, table, us, verdict
from .task_claim import chosen

STEP_DELAY = 0.05
TARGET = 2.0


async def _one(agent: HarnessAgent, user: str) -> float:
    ctx = RuntimeContext(session_id="s-" + uuid.uuid4().hex, user_id=user)
    t0 = time.perf_counter()
    msg = await agent.call("go", ctx)
    if msg.get_text_content() != "done":
        raise RuntimeError(f"unexpected answer {msg.get_text_content()!r}")
    return time.perf_counter() - t0


async def _loop_one(loop: ReActAgent, _: str) -> float:
    await loop.reply("go", AgentState(session_id="s-" + uuid.uuid4().hex))
    return 0.0


async def _many(
    call: Callable[[Any, str], Coroutine[Any, Any, float]], agent: Any, user: str, n: int
) -> tuple[float, float]:
    """(wall seconds, process CPU seconds per call) of ``n`` concurrent calls."""
    c0, t0 = time.process_time(), time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(call, agent, user)
    return time.perf_counter() - t0, (time.process_time() - c0) / n


async def _measure(
    store: BaseStore, workspace: Path, n: int, singles: int, runs: int
) -> tuple[Sample, Sample, Sample, Sample]:
    """One call alone, N concurrent calls (wall), their CPU per call, and the loop alone's CPU
    per call at the same concurrency (same model, no store, no harness), interleaved run by run."""
    model = BareModel(tool_iters=1, delay=STEP_DELAY)
    agent = HarnessAgent("bench", model, workspace=workspace, store=store, tools=[noop])
    loop = ReActAgent("bench", model, "", agent.loop.toolkit, agent.loop.config)
    user = "bench-" + uuid.uuid4().hex[:8]
    await _one(agent, user)  # warm-up: imports, pools, first connections
    gc_threshold()
    one: list[float] = []
    many: list[float] = []
    cpu: list[float] = []
    loop_cpu: list[float] = []
    for _ in range(runs):
        one += [await _one(agent, user) for _ in range(singles)]
        wall, per_call = await _many(_one, agent, user, n)
        many.append(wall)
        cpu.append(per_call)
        loop_cpu.append((await _many(_loop_one, loop, user, n))[1])
    return Sample("one", one), Sample("many", many), Sample("cpu", cpu), Sample("loop", loop_cpu)


def gc_threshold() -> int | None:
    """Apply ``AGENTSCOPE_TEAMS_BENCH_GC_THRESHOLD`` (generation 0's threshold), if set."""
    value = os.environ.get("AGENTSCOPE_TEAMS_BENCH_GC_THRESHOLD")
    if not value:
        return None
    set_young_threshold(young_threshold(value))
    return int(value)


async def run(fast: bool = False) -> str:
    n, singles, runs = (50, 3, 1) if fast else (1000, 5, 3)
    rows: list[list[str]] = []
    verdicts: list[str] = []
    for name, url in chosen([("memory", "memory://"), ("redis", REDIS_URL)]):
        namespace = f"bench-harness-{uuid.uuid4().hex[:8]}"
        options = {"namespace": namespace} if url.startswith("redis") else {}
        try:
            with tempfile.TemporaryDirectory() as tmp:
                async with store_from_url(url, **options) as store:
                    one, many, cpu_s, loop_s = await _measure(store, Path(tmp), n, singles, runs)
        except Exception as exc:  # a service that is down: say so, keep the other rows
            verdicts.append(f"{name}: not measured ({type(exc).__name__}: {exc})")
            continue
        finally:
            if url.startswith("redis"):
                await drop_redis_namespace(namespace)
        r = many.median / one.median
        cpu = cpu_s.median - loop_s.median
        rows.append(
            [
                name,
                fmt(one, ms),
                str(n),
                fmt(many, ms),
                f"{r:.2f}",
                fmt(cpu_s),
                fmt(loop_s),
                f"{cpu_s.median / loop_s.median:.1f}",
                us(cpu),
                f"{n / many.median:,.0f}",
            ]
        )
        verdicts.append(
            f"{name}: {n} concurrent calls ≤ {TARGET}x one call: {r:.2f}x — "
            + verdict(
                r <= TARGET,
                f"≈ {us(cpu)} µs of framework CPU per call, serialized on one event loop; "
                "see the profile notes",
            )
        )
    head = [
        "store",
        "one call ms",
        "concurrent calls",
        "wall ms",
        "wall / one call",
        "CPU µs per call",
        "loop alone CPU µs per call",
        "CPU x loop",
        "framework CPU µs per call",
        "calls/s",
    ]
    intro = (
        f"HarnessAgent (default tools + a no-op tool), model awaiting {STEP_DELAY * 1000:.0f} ms per "
        "step, 2 steps per call, every call a new session; median over runs ± interquartile spread. "
        "CPU is the process's (time.process_time) over the N concurrent calls, per call; the loop "
        "alone (same model and tools, no store, no harness) runs N concurrent replies in the same "
        "runs, and framework CPU is the difference."
        + (f" Collector generation-0 threshold {t}." if (t := gc_threshold()) else "")
    )
    return section("Concurrent HarnessAgent.call()", intro, table(head, rows), verdicts)
