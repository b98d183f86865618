"""Wake-up latency: a task assigned by one client until the member's first model request in a
``TeamRuntime`` served through another store connection.

Per backend (memory, Redis, PostgreSQL) the runtime polls every 30 s, so a wake-up within the round is the push
signal's (``store.base.signals_of``); the baseline is the same runtime with signals disabled and a
0.5 s poll. Each sample: ``assign_task`` returns -> the member's model is first asked. p50 / p99 over
the samples. To split the figure, "signal only" is ``signal`` -> the other store's ``wait_signal``
returning, and "one get" a single ``get`` round trip: the rest of a wake-up is the member runtime's
step (one round of reads: team record, open board, cursors, inboxes; the member lease if not held)
and the call's status write beside its session lease and load, before the model is asked.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path

import anyio

from agentscope_teams.context import RuntimeContext
from agentscope_teams.keys import TeamKeys
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, InMemoryStore, store_from_url
from agentscope_teams.store.base import signals_of
from agentscope_teams.teams import LocalTeamClient, MemberBuilder, TeamRef, TeamRuntime
from agentscope_teams.teams.member.builder import load_pool, member_session_id

from .fixtures import POSTGRES_URL, REDIS_URL, drop_redis_namespace
from .stats import ms, percentile, section, table, verdict

SPECS = Path(__file__).resolve().parents[1] / "specs"
TARGET_P50 = 0.020


async def _samples(mine: BaseStore, theirs: BaseStore, n: int, *, signals: bool) -> list[float]:
    for store in (mine, theirs):
        store.signals_enabled = signals  # type: ignore[attr-defined]
    ctx = RuntimeContext(session_id="bench", user_id=f"wake-{uuid.uuid4().hex[:8]}")
    lead = LocalTeamClient(theirs, ctx)
    team = await lead.create_team("wake")
    await lead.spawn_member(team.id, "reviewer", "reviewer", member_session_id(team.id, "w"))
    asked: list[float] = []
    woken = anyio.Event()

    def member(request: ModelRequest) -> str:
        asked.append(time.perf_counter())
        woken.set()
        return "done"

    runtime = TeamRuntime(mine, lease_ttl=5.0, poll=30.0 if signals else 0.5)
    with tempfile.TemporaryDirectory() as tmp:
        builder = MemberBuilder(
            store=mine,
            specs=load_pool(SPECS),
            client_factory=lambda s, c: LocalTeamClient(s, c),
            workspace=Path(tmp),
            root=Path(tmp),
            model=ScriptedModel(member),
        )
        runtime.watch(TeamRef(ctx, team.id, builder))
        out: list[float] = []
        try:
            await anyio.sleep(0.3)  # the runtime starts and subscribes
            for i in range(n):
                seen, woken = len(asked), anyio.Event()
                await lead.assign_task(team.id, f"task {i}", assignee="reviewer")
                t0 = time.perf_counter()
                with anyio.fail_after(10):
                    await woken.wait()
                out.append(asked[seen] - t0)
                await anyio.sleep(0.05)  # the member finishes its reply
        finally:
            await runtime.aclose()
    return out


async def _signal_only(mine: BaseStore, theirs: BaseStore, n: int) -> list[float]:
    """``theirs.signal`` -> ``mine.wait_signal`` returns, on a fresh channel."""
    channel = TeamKeys(("o:", f"u:wake-{uuid.uuid4().hex[:8]}"), "bench").signal()
    waiter, sender = signals_of(mine), signals_of(theirs)
    assert waiter is not None and sender is not None
    await waiter.wait_signal([channel], 0.05)  # subscribes
    out: list[float] = []
    for _ in range(n):
        sent: list[float] = []
        async with anyio.create_task_group() as tg:

            async def send(sent: list[float] = sent) -> None:
                await anyio.sleep(0.01)
                sent.append(time.perf_counter())
                await sender.signal(channel)

            tg.start_soon(send)
            assert await waiter.wait_signal([channel], 10)
            out.append(time.perf_counter() - sent[0])
    return out


async def _one_get(store: BaseStore, n: int) -> list[float]:
    key = TeamKeys(("o:", f"u:wake-{uuid.uuid4().hex[:8]}"), "bench").team()
    await store.put(key, b"{}")
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await store.get(key)
        out.append(time.perf_counter() - t0)
    await store.delete(key)
    return out


def _row(name: str, how: str, found: list[float]) -> list[str]:
    return [name, how, ms(percentile(found, 50)), ms(percentile(found, 99)), str(len(found))]


async def _split(name: str, n: int) -> list[list[str]]:
    """The signal-only and one-get rows of a backend with two connections."""
    if name == "memory":
        store = InMemoryStore()
        return [_row(name, "signal only", await _signal_only(store, store, n))]
    ns = f"bench-wake-{uuid.uuid4().hex[:8]}"
    url = REDIS_URL if name == "redis" else POSTGRES_URL
    opts = {"namespace": ns} if name == "redis" else {}
    async with store_from_url(url, **opts) as mine, store_from_url(url, **opts) as theirs:
        rows = [
            _row(name, "signal only", await _signal_only(mine, theirs, n)),
            _row(name, "one get (round trip)", await _one_get(mine, n)),
        ]
    if name == "redis":
        await drop_redis_namespace(ns)
    return rows


async def _backend(name: str, n: int) -> list[list[str]]:
    rows = []
    for signals in (True, False):
        if name == "memory":
            store = InMemoryStore()
            found = await _samples(store, store, n, signals=signals)
        elif name == "postgres":  # two stores, two pools: the member's LISTENs, the lead NOTIFYs
            async with store_from_url(POSTGRES_URL) as mine, store_from_url(POSTGRES_URL) as theirs:
                found = await _samples(mine, theirs, n, signals=signals)
        else:
            ns = f"bench-wake-{uuid.uuid4().hex[:8]}"
            async with (
                store_from_url(REDIS_URL, namespace=ns) as mine,
                store_from_url(REDIS_URL, namespace=ns) as theirs,
            ):
                found = await _samples(mine, theirs, n, signals=signals)
            await drop_redis_namespace(ns)
        how = "push signal (poll 30 s)" if signals else "poll 0.5 s (baseline)"
        rows.append(_row(name, how, found))
    return rows + await _split(name, n)


async def run(fast: bool) -> str:
    n = 3 if fast else 30
    rows = []
    for name in ("memory", "redis", "postgres"):
        rows += await _backend(name, n)
    signalled = [r for r in rows if r[1].startswith("push")]
    body = table(["backend", "wake-up", "p50", "p99", "samples"], rows)
    worst = max(float(r[2].split()[0]) for r in signalled)
    return section(
        "Wake-up latency (task assigned -> member's first model request)",
        __doc__.split("\n\n", 1)[1].replace("\n", " ") if __doc__ else "",
        body,
        [f"push p50 <= 20 ms: {verdict(worst <= TARGET_P50 * 1000)} (worst backend {worst} ms)"],
    )
