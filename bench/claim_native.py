"""The board's native queue (issue 13, part 1): a claim against one CAS put, and against 1,000 held
tasks, on every backend with a native path.

A claim here is ``TaskBoard.claim_next`` (the board operation, without the team-record read of
``LocalTeamClient``), timed alone; its task is then left held. Three subjects alternate round by
round on one store: a CAS put of a task-sized value (the baseline), a native claim, and a generic
claim (``native=False``, on its own team: the old path, for reference). A second table claims on two
native boards alternating, one whose other member holds ``HELD`` tasks and one holding none.

With ``AGENTSCOPE_TEAMS_BENCH_PRIVATE_REDIS`` set to the URL of a Redis server nothing else uses
(its ``INFO commandstats`` are server-wide and reset each round), a third table splits the Redis
claim and CAS into client CPU (``time.process_time``) and server time per script call (``EVALSHA``,
or ``FCALL`` where the board's queue calls its Redis functions).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient, Member, TeamKeys
from agentscope_teams.teams.board import TaskBoard

from .fixtures import MYSQL_URL, POSTGRES_URL, REDIS_URL, drop_redis_namespace
from .stats import Op, RoundFn, Sample, compare, fmt, interleaved, section, table, us, verdict
from .task_claim import chosen

CAS_TARGET = 1.5
HELD = 1_000
HELD_TARGET = 1.5
BACKENDS = [("redis", REDIS_URL), ("postgres", POSTGRES_URL), ("mariadb", MYSQL_URL)]
CTX = RuntimeContext(session_id="bench", user_id="bench-native")
PRIVATE_REDIS = os.environ.get("AGENTSCOPE_TEAMS_BENCH_PRIVATE_REDIS")


async def _board(store: BaseStore, native: bool, tasks: int, held: int = 0) -> TaskBoard:
    client = LocalTeamClient(store, CTX)
    team = await client.create_team("bench", members=[Member(name="h"), Member(name="b")])
    board = TaskBoard(store, TeamKeys(CTX.owner_scope(), team.id), native=native)
    for i in range(held):
        await board.create("lead", f"held {i}")
        await board.claim_next("h", 3600)
    for i in range(tasks):
        await board.create("lead", f"task {i}")
    return board


def _claims(board: TaskBoard) -> Callable[[int], Awaitable[None]]:
    async def claim(_: int) -> None:
        assert await board.claim_next("b", 3600) is not None

    return claim


async def _cas(store: BaseStore) -> Callable[[int], Awaitable[None]]:
    key = ("teams", "o:", "u:bench-native", "cas-baseline", uuid.uuid4().hex)
    version = [await store.put(key, b"x" * 900)]

    async def cas(_: int) -> None:
        version[0] = await store.put(key, b"x" * 900, expected_version=version[0])

    return cas


async def _measure(store: BaseStore, ops: int, rounds: int, held: int) -> dict[str, Sample]:
    tasks = ops * (rounds + 2)
    native = await _board(store, True, tasks)
    if native.queue is None:
        raise LookupError("no native path on this backend")
    subjects = {
        "cas": await _cas(store),
        "native": _claims(native),
        "generic": _claims(await _board(store, False, tasks)),
        "native, 0 held": _claims(await _board(store, True, tasks)),
        f"native, {held:,} held": _claims(await _board(store, True, tasks, held)),
    }
    return await interleaved(subjects, ops=ops, rounds=rounds)


def _costed(op: Op, server: Any, costs: dict[str, list[float]]) -> RoundFn:
    """A round of ``op`` timed on the wall, noting its client CPU and its scripts' server time."""

    async def run(ops: int) -> float:
        await server.config_resetstat()
        w0, c0 = time.perf_counter(), time.process_time()
        for i in range(ops):
            await op(i)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        stats = await server.info("commandstats")
        costs["cpu"].append(cpu / ops)
        usec = sum(stats.get(f"cmdstat_{c}", {}).get("usec", 0) for c in ("evalsha", "fcall"))
        costs["server"].append(usec / 1e6 / ops)
        return wall / ops

    return run


async def _private(url: str, ops: int, rounds: int) -> str:
    """The claim / CAS table on a private server (see the module docs)."""
    import redis.asyncio as aioredis

    server = aioredis.Redis.from_url(url)
    costs: dict[str, dict[str, list[float]]] = {
        n: {"cpu": [], "server": []} for n in ("cas", "native")
    }
    namespace = f"bench-private-{uuid.uuid4().hex[:8]}"
    try:
        async with store_from_url(url, namespace=namespace) as store:
            board = await _board(store, True, ops * (rounds + 3))
            ops_of = {"cas": await _cas(store), "native": _claims(board)}
            named = {n: _costed(op, server, costs[n]) for n, op in ops_of.items()}
            walls = await compare(named, ops=ops, rounds=rounds)
    finally:
        keys = [k async for k in server.scan_iter(match=f"{namespace}:*", count=1000)]
        for i in range(0, len(keys), 500):
            await server.delete(*keys[i : i + 500])
        await server.aclose()
    rows = []
    for name in ("cas", "native"):
        cpu, srv = (Sample(name, costs[name][k][-rounds:]) for k in ("cpu", "server"))
        rows.append([name, fmt(walls[name], us), fmt(cpu, us), fmt(srv, us)])
    cost = walls["native"].median / walls["cas"].median
    head = ["subject", "wall µs", "client CPU µs", "server µs (EVALSHA / FCALL)"]
    return table(head, rows) + f"\n\nnative / CAS (wall): {cost:.2f}"


async def run(fast: bool = False) -> str:
    ops, rounds, held = (5, 3, 40) if fast else (40, 9, HELD)
    cost_rows, held_rows, verdicts = [], [], []
    for name, url in chosen(BACKENDS):
        namespace = f"bench-native-{uuid.uuid4().hex[:8]}"
        options = {"namespace": namespace} if url.startswith("redis") else {}
        try:
            async with store_from_url(url, **options) as store:
                found = await _measure(store, ops, rounds, held)
        except Exception as exc:  # a service that is down, or no native path yet: say so
            verdicts.append(f"{name}: not measured ({type(exc).__name__}: {exc})")
            continue
        finally:
            if url.startswith("redis"):
                await drop_redis_namespace(namespace)
        cas, native, generic = found["cas"], found["native"], found["generic"]
        cost = native.median / cas.median
        cost_rows.append(
            [
                name,
                fmt(cas, us),
                fmt(native, us),
                fmt(generic, us),
                f"{cost:.2f}",
                f"{generic.median / cas.median:.1f}",
            ]
        )
        none, many = found["native, 0 held"], found[f"native, {held:,} held"]
        growth = many.median / none.median
        held_rows.append([name, fmt(none, us), fmt(many, us), f"{growth:.2f}"])
        if name == "redis":
            verdicts.append(
                f"{name}: native claim ≤ {CAS_TARGET}x a CAS put: {cost:.2f}x — "
                + verdict(cost <= CAS_TARGET, "see the profile notes")
            )
        verdicts.append(
            f"{name}: native claim with {held:,} held ≤ {HELD_TARGET}x none: {growth:.2f}x — "
            + verdict(growth <= HELD_TARGET, "see the profile notes")
        )
    intro = (
        f"TaskBoard.claim_next alone, {rounds} rounds of {ops} claims, the subjects alternating "
        "round by round on one store; median µs per operation ± interquartile spread."
    )
    head = [
        "backend",
        "CAS put µs",
        "native claim µs",
        "generic claim µs",
        "native / CAS",
        "generic / CAS",
    ]
    body = (
        table(head, cost_rows)
        + "\n\n"
        + table(
            ["backend", "native claim µs, 0 held", f"native claim µs, {held:,} held", "ratio"],
            held_rows,
        )
    )
    if PRIVATE_REDIS and any(name == "redis" for name, _ in chosen(BACKENDS)):
        body += "\n\nRedis, private server:\n\n" + await _private(PRIVATE_REDIS, ops * 2, rounds)
    return section("Native claims: one round trip", intro, body, verdicts)
