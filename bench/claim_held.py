"""A claim's cost with 1,000 tasks held by another member vs none (memory, Redis, PostgreSQL), on
the board's native path where the backend has one and on the generic path.

Two teams on the same store: one where member ``h`` holds ``HELD`` in-progress tasks, one where it
holds none; both have the same pending tasks. Member ``b`` claims the next task (``claim_task``
without a task id) and completes it; only the claim is timed. The two boards alternate round by
round. Before issue 13 held tasks stayed in the open index and every claim read each of them again
(1,019 store calls and 133x the cost with 1,000 held); now they sit in their own index.
"""

from __future__ import annotations

import os
import statistics
import time
import uuid

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient
from agentscope_teams.teams.queues.base import NATIVE_ENV
from agentscope_teams.teams.rules.models import Member

from .fixtures import POSTGRES_URL, REDIS_URL, drop_redis_namespace
from .stats import Sample, fmt, ms, section, table, verdict

HELD = 1_000
TARGET = 1.5


def _ctx() -> RuntimeContext:
    return RuntimeContext(session_id="bench", user_id="bench-held")


async def _board(client: LocalTeamClient, held: int, pending: int) -> str:
    team = await client.create_team("held", members=[Member(name="h"), Member(name="b")])
    for i in range(held):
        task = await client.assign_task(team.id, f"held {i}")
        await client.claim_task(team.id, "h", task.id)
    for i in range(pending):
        await client.assign_task(team.id, f"pending {i}")
    return team.id


async def _claims(client: LocalTeamClient, team_id: str, n: int) -> float:
    """The median of ``n`` timed claims (each completed, untimed)."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        task = await client.claim_task(team_id, "b")
        times.append(time.perf_counter() - t0)
        assert task is not None
        await client.complete_task(team_id, "b", task.id, "done")
    return statistics.median(times)


async def _measure(store: BaseStore, held: int, rounds: int, per_round: int) -> dict[int, Sample]:
    client = LocalTeamClient(store, _ctx())
    teams = {h: await _board(client, h, rounds * per_round) for h in (0, held)}
    medians: dict[int, list[float]] = {h: [] for h in teams}
    for _ in range(rounds):
        for h, team_id in teams.items():
            medians[h].append(await _claims(client, team_id, per_round))
    for team_id in teams.values():
        await client.delete_team(team_id)
    return {h: Sample(f"{h} held", m) for h, m in medians.items()}


async def run(fast: bool = False) -> str:
    held, rounds, per_round = (50, 3, 5) if fast else (HELD, 7, 20)
    backends = [
        ("memory", "memory://", "generic"),
        ("redis", REDIS_URL, "native"),
        ("redis", REDIS_URL, "generic"),
        ("postgres", POSTGRES_URL, "native"),
        ("postgres", POSTGRES_URL, "generic"),
    ]
    rows, verdicts = [], []
    before = os.environ.get(NATIVE_ENV)
    for name, url, path in backends:
        namespace = f"bench-held-{uuid.uuid4().hex[:8]}"
        options = {"namespace": namespace} if url.startswith("redis") else {}
        os.environ[NATIVE_ENV] = "1" if path == "native" else "0"
        try:
            async with store_from_url(url, **options) as store:
                found = await _measure(store, held, rounds, per_round)
        except Exception as exc:  # a service that is down: say so, keep the other rows
            verdicts.append(f"{name} ({path}): not measured ({type(exc).__name__}: {exc})")
            continue
        finally:
            if url.startswith("redis"):
                await drop_redis_namespace(namespace)
            if before is None:
                os.environ.pop(NATIVE_ENV, None)
            else:
                os.environ[NATIVE_ENV] = before
        cost = found[held].median / found[0].median
        rows.append([name, path, fmt(found[0], ms), fmt(found[held], ms), f"{cost:.2f}"])
        verdicts.append(
            f"{name} ({path}): claim with {held:,} held ≤ {TARGET}x none: {cost:.2f}x — "
            + verdict(cost <= TARGET, "see the profile notes")
        )
    intro = (
        f"One claimer; {rounds} rounds of {per_round} claims per board, the boards alternating; "
        f"median claim latency (the claim only, each task then completed) ± interquartile spread "
        f"of the round medians. Before issue 13: 1,019 store calls and 133x with 1,000 held."
    )
    head = ["backend", "path", "claim ms, 0 held", f"claim ms, {held:,} held", "ratio"]
    return section("Claim cost vs held tasks", intro, table(head, rows), verdicts)
