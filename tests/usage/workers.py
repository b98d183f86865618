"""Child processes of the usage tests: agents calling the local provider through a shared store."""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass
from typing import Any

import anyio

from agentscope_teams.agent.config import ReActConfig
from agentscope_teams.agent.react import ReActAgent
from agentscope_teams.errors import BudgetExceededError, ModelError
from agentscope_teams.model.openai import OpenAIChatModel
from agentscope_teams.state import AgentState
from agentscope_teams.store import store_from_url
from agentscope_teams.usage import Budget, RateLimit, UsageGovernor, add_budget, tenant


@dataclass(frozen=True)
class Job:
    store_url: str
    base_url: str
    model: str
    agents: int
    #: Calls per agent (None: until the budget stops it or ``stop`` is set).
    calls: int | None = None
    team: str = ""
    team_tokens: int | None = None
    rate_limit: RateLimit | None = None
    tenant: str = ""


async def run_job(job: Job, go: Any = None, stop: Any = None) -> dict[str, int]:
    """Run ``job.agents`` agents concurrently; counts of calls made, budget stops and 429s."""
    counts = {"calls": 0, "budget_stops": 0, "rate_limited": 0}
    async with store_from_url(job.store_url) as store:
        gov = UsageGovernor(store, rate_limit=job.rate_limit, max_output_tokens=100)
        model = OpenAIChatModel(job.model, base_url=job.base_url, api_key="k", max_retries=0)
        agent = ReActAgent("worker", model, config=ReActConfig(stream_model=False))
        if go is not None:
            await anyio.to_thread.run_sync(go.wait)

        async def one(i: int) -> None:
            state = AgentState(session_id=f"s{i}")
            n = 0
            while (job.calls is None or n < job.calls) and not (stop is not None and stop.is_set()):
                try:
                    await agent.reply(f"{job.tenant or job.team}: call {n}", state)
                except BudgetExceededError as exc:
                    assert exc.budget == f"team:{job.team}", exc.budget
                    counts["budget_stops"] += 1
                    return
                except ModelError as exc:
                    if exc.status_code != 429:
                        raise
                    counts["rate_limited"] += 1  # the shared limiter holds off: ask again
                    continue
                counts["calls"] += 1
                n += 1

        budget = Budget(max_tokens=job.team_tokens) if job.team_tokens else None
        with gov.bind(), add_budget(f"team:{job.team}", budget), tenant(job.tenant or "-"):
            async with anyio.create_task_group() as tg:
                for i in range(job.agents):
                    tg.start_soon(one, i)
        await model.aclose()
    return counts


def child(job: Job, go: Any, stop: Any, results: Any) -> None:
    results.put(anyio.run(run_job, job, go, stop))


def run_processes(
    jobs: list[Job], *, stop_when: Any = None, timeout: float = 120.0
) -> list[dict[str, int]]:
    """Run each job in its own process (spawned), start them together, return their counts."""
    mp = multiprocessing.get_context("spawn")
    go, stop, results = mp.Barrier(len(jobs)), mp.Event(), mp.Queue()
    procs = [mp.Process(target=child, args=(j, go, stop, results)) for j in jobs]
    for p in procs:
        p.start()
    if stop_when is not None:
        import time

        deadline = time.monotonic() + timeout
        while not stop_when() and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
    out = [results.get(timeout=timeout) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0, f"worker exited with {p.exitcode}"
    return out


async def _one_governed_reply(
    store_url: str, base_url: str, model: str, limit: RateLimit, prompt: str, ready: Any, go: Any
) -> float:
    """One agent reply whose model call a shared rate limit governs (the model's own retries on),
    once ``go`` is set; returns when it was let go (``time.time()``)."""
    import time

    async with store_from_url(store_url) as store:
        gov = UsageGovernor(store, rate_limit=limit, max_output_tokens=100)
        async with OpenAIChatModel(model, base_url=base_url, api_key="k", max_retries=3) as m:
            agent = ReActAgent("worker", m, config=ReActConfig(stream_model=False))
            ready.set()
            await anyio.to_thread.run_sync(go.wait)
            started = time.time()
            with gov.bind():
                msg = await agent.reply(prompt, AgentState(session_id=f"s-{prompt}"))
            assert msg.get_text_content() == "ok", msg
            await gov.aclose()
    return started


def governed_reply_child(
    store_url: str,
    base_url: str,
    model: str,
    limit: RateLimit,
    prompt: str,
    ready: Any,
    go: Any,
    results: Any,
) -> None:
    """A process making :func:`_one_governed_reply`; puts (prompt, when it was let go)."""
    args = (store_url, base_url, model, limit, prompt, ready, go)
    results.put((prompt, anyio.run(_one_governed_reply, *args)))
