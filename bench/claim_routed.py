"""A claim's cost with 1,000 pending tasks routed to another member ahead of the free ones vs
none (issue 26.1), on every backend with a native queue.

Two native boards on one store alternate round by round: on one, member ``o`` has ``ROUTED``
pending tasks routed to it, created before the free ones; on the other, only free tasks. Member
``b`` claims (``TaskBoard.claim_next``, timed alone; the task is then left held), so every claim
passes the routed tasks by. SQL stores get tables of their own (a fresh prefix, dropped after).
Before issue 26 a claim walked the routed tasks one by one (PostgreSQL: filtered from the ready
index; MariaDB: examined and locked; Redis: 256 per script call, several calls per claim).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import text

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient, Member, TeamKeys
from agentscope_teams.teams.board import TaskBoard

from .fixtures import MYSQL_URL, POSTGRES_URL, REDIS_URL, drop_redis_namespace
from .stats import Sample, fmt, interleaved, section, table, verdict

ROUTED = 1_000
TARGET = 1.5
BACKENDS = [("redis", REDIS_URL), ("postgres", POSTGRES_URL), ("mariadb", MYSQL_URL)]
CTX = RuntimeContext(session_id="bench", user_id="bench-routed")


async def _board(store: BaseStore, routed: int, free: int) -> TaskBoard:
    client = LocalTeamClient(store, CTX)
    team = await client.create_team("routed", members=[Member(name="o"), Member(name="b")])
    board = TaskBoard(store, TeamKeys(CTX.owner_scope(), team.id), native=True)
    if board.queue is None:
        raise LookupError("no native path on this backend")
    for i in range(routed):
        await board.create("lead", f"for o {i}", assignee="o")
    for i in range(free):
        await board.create("lead", f"for anyone {i}")
    return board


def _claims(board: TaskBoard) -> Callable[[int], Awaitable[None]]:
    async def claim(_: int) -> None:
        task = await board.claim_next("b", 3600)
        assert task is not None and task.assignee is None

    return claim


async def _measure(store: BaseStore, routed: int, ops: int, rounds: int) -> dict[str, Sample]:
    free = ops * (rounds + 2)
    subjects = {
        "none": _claims(await _board(store, 0, free)),
        "routed": _claims(await _board(store, routed, free)),
    }
    return await interleaved(subjects, ops=ops, rounds=rounds)


async def _drop_tables(store: Any, prefix: str) -> None:
    where = "current_schema()" if store.dialect == "postgresql" else "DATABASE()"

    async def run(conn: Any) -> None:
        sql = f"SELECT table_name FROM information_schema.tables WHERE table_schema = {where}"
        for (name,) in (await conn.execute(text(sql))).all():
            if name.startswith(prefix):
                await conn.execute(text(f"DROP TABLE IF EXISTS {name}"))

    await store.transaction("bench drop", run, write=True)


async def _backend(url: str, routed: int, ops: int, rounds: int) -> dict[str, Sample]:
    """The two boards measured on a store of ``url`` with keys or tables of its own."""
    tag = uuid.uuid4().hex[:8]
    redis = url.startswith("redis")
    options = {"namespace": f"bench-routed-{tag}"} if redis else {"table_prefix": f"br{tag}_"}
    try:
        async with store_from_url(url, **options) as store:
            try:
                return await _measure(store, routed, ops, rounds)
            finally:
                if not redis:
                    await _drop_tables(store, options["table_prefix"])
    finally:
        if redis:
            await drop_redis_namespace(options["namespace"])


async def run(fast: bool = False) -> str:
    routed, ops, rounds = (50, 5, 3) if fast else (ROUTED, 20, 9)
    rows, verdicts = [], []
    for name, url in BACKENDS:
        try:
            found = await _backend(url, routed, ops, rounds)
        except Exception as exc:  # a service that is down: say so, keep the other rows
            verdicts.append(f"{name}: not measured ({type(exc).__name__}: {exc})")
            continue
        cost = found["routed"].median / found["none"].median
        rows.append([name, fmt(found["none"]), fmt(found["routed"]), f"{cost:.2f}"])
        verdicts.append(
            f"{name}: claim with {routed:,} routed to another member ahead ≤ {TARGET}x none: "
            f"{cost:.2f}x — " + verdict(cost <= TARGET)
        )
    intro = (
        f"One claimer; {rounds} rounds of {ops} claims per board, the two boards alternating; "
        "median µs per claim (the claim only) ± interquartile spread of the round medians."
    )
    head = ["backend", "claim µs, 0 routed", f"claim µs, {routed:,} routed ahead", "ratio"]
    return section("Claim cost vs tasks routed to others", intro, table(head, rows), verdicts)
