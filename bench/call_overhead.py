"""``HarnessAgent.call()`` overhead per store: load + lease + run + save around one reply.

Baseline: the same reply through ``ReActAgent.reply`` with no store (the loop alone). Each call is a
turn of a fresh session (create path) or of one long-lived session (resume path), with a bare model
that answers at once, so what is measured is the framework.
"""

from __future__ import annotations

import itertools
import tempfile
import time
import uuid

from agentscope_teams import AgentState, HarnessAgent, ReActAgent, RuntimeContext
from agentscope_teams.store import store_from_url
from agentscope_teams.tools import Toolkit

from .fixtures import REDIS_URL, BareModel, drop_redis_namespace
from .stats import Op, compare, fmt, interleaved, ratio, section, table, timed

CPU_TARGET = 4.0


async def _store_row(
    name: str, url: str, tmp: str, namespace: str, bare: Op, ops: int, rounds: int
) -> list[str]:
    model = BareModel(tool_iters=0)
    counter = itertools.count()
    options = {"namespace": namespace} if name == "redis" else {}
    async with store_from_url(url, **options) as store:
        agent = HarnessAgent(
            "lead", model, "", store=store, workspace=f"{tmp}/ws", builtin_tools=False
        )
        resume = RuntimeContext(session_id="resume", user_id="bench")

        async def fresh(i: int) -> None:
            ctx = RuntimeContext(session_id=f"{name}-{next(counter)}", user_id="bench")
            await agent.call("hi", ctx)

        async def again(i: int) -> None:
            await agent.clear_context(resume)
            await agent.call("hi", resume)

        named = {"loop": bare, "fresh": fresh, "resume": again}
        s = await interleaved(named, ops=ops, rounds=rounds)
        cpu = await compare(
            {k: timed(op, time.process_time) for k, op in named.items()}, ops=ops, rounds=rounds
        )
    return [
        name,
        fmt(s["loop"]),
        fmt(s["fresh"]),
        f"{ratio(s['fresh'], s['loop']):.1f}",
        fmt(cpu["loop"]),
        fmt(cpu["fresh"]),
        f"{ratio(cpu['fresh'], cpu['loop']):.1f}",
        fmt(s["resume"]),
    ]


async def run(fast: bool) -> str:
    ops, rounds = (5, 3) if fast else (100, 7)
    loop = ReActAgent("lead", BareModel(tool_iters=0), "", Toolkit())
    counter = itertools.count()

    async def bare(i: int) -> None:
        await loop.reply("hi", AgentState(session_id=f"s{next(counter)}"))

    rows = []
    namespace = "bench-call-" + uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory() as tmp:
        urls = {"memory": "memory://", "file": f"file://{tmp}/store", "redis": REDIS_URL}
        for name, url in urls.items():
            rows.append(await _store_row(name, url, tmp, namespace, bare, ops, rounds))
    await drop_redis_namespace(namespace)
    head = [
        "store",
        "loop alone µs",
        "call(), new session µs",
        "x loop",
        "loop CPU µs",
        "call() CPU µs",
        "CPU x loop",
        "clear + call(), same session µs",
    ]
    return section(
        "HarnessAgent.call() overhead per store",
        "One reply with a model that answers at once; `call()` adds load, lease, save (and, for the "
        "same session, `clear_context` is a second locked load + save). Wall time, then the "
        "process's CPU time (every thread) in separate interleaved rounds. Median ± interquartile "
        "spread.",
        table(head, rows),
        [
            f"memory: call() CPU ≤ {CPU_TARGET:.0f}x the loop alone's CPU: "
            + next((r[6] for r in rows if r[0] == "memory"), "-")
            + "x"
        ],
    )
