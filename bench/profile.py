"""Profile one hot path: ``python -m bench.profile TARGET [-n N]``.

Targets: ``session`` (Redis round trip of the 50-message state), ``cas:<backend>`` (memory, file,
sqlite, postgres, mariadb, redis), ``react`` (one 20-iteration reply), ``harness:<store>`` (N
concurrent ``HarnessAgent.call``, memory or redis), ``claim:<backend>`` (claim + complete, one
claimer, redis or postgres). Uses pyinstrument when installed (``pip install pyinstrument``), else
cProfile sorted by own time. ``AGENTSCOPE_TEAMS_BENCH_GC_THRESHOLD`` as for
``bench.harness_concurrency``.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from agentscope_teams import HarnessAgent
from agentscope_teams.agent import ReActAgent, ReActConfig
from agentscope_teams.context import RuntimeContext
from agentscope_teams.sessions import SessionStorage
from agentscope_teams.state import AgentState
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient
from agentscope_teams.tools import Toolkit

from .fixtures import (
    MYSQL_URL,
    POSTGRES_URL,
    REDIS_URL,
    BareModel,
    conversation,
    drop_redis_namespace,
    noop,
    state_from,
)
from .harness_concurrency import gc_threshold
from .react_overhead import TOOL_ITERS, CountingModel

Work = Callable[[], Awaitable[object]]
URLS = {
    "memory": "memory://",
    "redis": REDIS_URL,
    "postgres": POSTGRES_URL,
    "mariadb": MYSQL_URL,
}


def _url(backend: str, tmp: str) -> str:
    return {"file": f"file://{tmp}/store", "sqlite": f"sqlite:///{tmp}/s.db"}.get(backend) or URLS[
        backend
    ]


async def _session(store: BaseStore, _: str) -> Work:
    storage = SessionStorage(store)
    sid = "s-" + uuid.uuid4().hex
    await storage.upsert_session(
        user_id="prof", agent_id="agent", session_id=sid, state=state_from(conversation(), sid)
    )

    async def work() -> None:
        record = await storage.get_session("prof", "agent", sid)
        assert record is not None
        await storage.update_session_state(
            user_id="prof", agent_id="agent", session_id=sid, state=record.state
        )

    return work


async def _cas(store: BaseStore, _: str) -> Work:
    key = ("prof", "o:", "u:prof", "cas", uuid.uuid4().hex)
    value = os.urandom(1024)
    version = [await store.put(key, value)]

    async def work() -> None:
        version[0] = await store.put(key, value, expected_version=version[0])

    return work


async def _react(_: BaseStore, __: str) -> Work:
    config = ReActConfig(max_iters=TOOL_ITERS + 5, stream_model=False)
    agent = ReActAgent("prof", CountingModel(TOOL_ITERS), "", Toolkit([noop]), config)
    return lambda: agent.reply("go", AgentState(session_id="prof"))


def _harness(n: int) -> Callable[[BaseStore, str], Awaitable[Work]]:
    async def build(store: BaseStore, tmp: str) -> Work:
        model = BareModel(tool_iters=1, delay=0.05)
        agent = HarnessAgent("prof", model, workspace=Path(tmp), store=store, tools=[noop])

        async def work() -> None:
            async with anyio.create_task_group() as tg:
                for _ in range(n):
                    ctx = RuntimeContext(session_id="s-" + uuid.uuid4().hex, user_id="prof")
                    tg.start_soon(agent.call, "go", ctx)

        return work

    return build


async def _claim(store: BaseStore, _: str) -> Work:
    client = LocalTeamClient(store, RuntimeContext(session_id="prof", user_id="prof"))
    team = await client.create_team("prof")
    for i in range(300):
        await client.assign_task(team.id, f"task {i}")

    async def work() -> None:
        task = await client.claim_task(team.id, "lead")
        assert task is not None
        await client.complete_task(team.id, "lead", task.id, "done")

    return work


async def main(target: str, n: int) -> None:
    kind, _, backend = target.partition(":")
    builders: dict[str, Callable[[BaseStore, str], Awaitable[Work]]] = {
        "session": _session,
        "cas": _cas,
        "react": _react,
        "harness": _harness(n),
        "claim": _claim,
    }
    backend = backend or ("redis" if kind in ("session", "claim") else "memory")
    repeat = 1 if kind == "harness" else n
    namespace = f"bench-prof-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as tmp:
        url = _url(backend, tmp)
        options: dict[str, Any] = {"namespace": namespace} if url.startswith("redis") else {}
        try:
            async with store_from_url(url, **options) as store:
                work = await builders[kind](store, tmp)
                for _ in range(min(20, repeat)):
                    await work()  # warm-up
                gc_threshold()
                await _profiled(work, repeat)
        finally:
            if url.startswith("redis"):
                await drop_redis_namespace(namespace)


async def _profiled(work: Work, repeat: int) -> None:
    try:
        from pyinstrument import Profiler
    except ImportError:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(repeat):
            await work()
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
        return
    p = Profiler(interval=0.0002, async_mode="disabled")
    p.start()
    for _ in range(repeat):
        await work()
    p.stop()
    print(p.output_text(unicode=False, color=False))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.profile")
    parser.add_argument(
        "target", help="session | cas:<backend> | react | harness:<store> | claim:<b>"
    )
    parser.add_argument("-n", type=int, default=500, help="repetitions (harness: concurrent calls)")
    args = parser.parse_args()
    anyio.run(main, args.target, args.n)
