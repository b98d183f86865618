"""Wake-up to claim on Redis and PostgreSQL: a task assigned to an idle member until the member has
claimed it, against one direct claim (issue 26, item 4: p50 <= 5x).

The member runs in a ``TeamRuntime`` on its own store connection (push signals, 30 s poll); its
scripted model calls ``claimTask`` when woken and, once it sees the claim's result, completes the
task and ends its turn. Two figures per sample, both from ``assign_task`` returning: **claim
committed** (the member's ``claim_task`` returned: what the issue's target names) and **claim seen
by the model** (the model's request that carries the claim's result: the claim's step saved and
the next step begun). The baseline is one ``TaskBoard.claim_next`` (one script call, one statement)
of a task assigned to another member, timed alone (assigned before the sample, so the member
runtime's step that its assignment signals has ended when it is claimed); the two alternate sample
by sample. Reported:
p50 of each and the ratios of the p50s, per round of ``n`` samples.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import (
    LocalTeamClient,
    Member,
    MemberBuilder,
    TeamKeys,
    TeamRef,
    TeamRuntime,
)
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.member.builder import load_pool
from agentscope_teams.teams.rules.models import Task

from .fixtures import POSTGRES_URL, REDIS_URL, drop_redis_namespace
from .stats import ms, percentile, section, table, verdict
from .task_claim import chosen

SPECS = Path(__file__).resolve().parents[1] / "specs"
TARGET = 5.0
BACKENDS = [("redis", REDIS_URL), ("postgres", POSTGRES_URL)]


@dataclass
class Samples:
    """One round's samples (seconds): claim committed, claim seen by the model, direct claim."""

    committed: list[float] = field(default_factory=list)
    seen: list[float] = field(default_factory=list)
    direct: list[float] = field(default_factory=list)


class _TimedClient(LocalTeamClient):
    """The member's client, noting when each of its claims returned (committed)."""

    stamps: list[float]

    async def claim_task(self, *args: object, **kwargs: object) -> Task | None:
        task = await super().claim_task(*args, **kwargs)  # type: ignore[arg-type]
        _TimedClient.stamps.append(time.perf_counter())
        return task


def _results(request: ModelRequest) -> list[ToolResultBlock]:
    last = request.messages[-1] if request.messages else None
    return last.tool_results() if last is not None else []


@asynccontextmanager
async def _stores(url: str) -> AsyncIterator[tuple[BaseStore, BaseStore]]:
    """Two connections (the member's, the lead's) to a fresh namespace of ``url``."""
    ns = f"bench-wc-{uuid.uuid4().hex[:8]}"
    opts = {"namespace": ns} if url.startswith("redis") else {}
    async with store_from_url(url, **opts) as mine, store_from_url(url, **opts) as theirs:
        yield mine, theirs
    if url.startswith("redis"):
        await drop_redis_namespace(ns)


async def _round(mine: BaseStore, theirs: BaseStore, n: int) -> Samples:
    ctx = RuntimeContext(session_id="bench", user_id=f"wc-{uuid.uuid4().hex[:8]}")
    lead = LocalTeamClient(theirs, ctx)
    team = await lead.create_team("wake", members=[Member(name="direct")])
    await lead.spawn_member(team.id, "reviewer", "reviewer")
    board = TaskBoard(theirs, TeamKeys(ctx.owner_scope(), team.id))
    seen_at: list[float] = []
    committed_at: list[float] = []
    _TimedClient.stamps = committed_at
    done = anyio.Event()

    def member(request: ModelRequest) -> ModelResponse | str:
        results = _results(request)
        if not results:
            return ScriptedModel.tool_call("claimTask", {})
        last = results[-1]
        if last.name == "claimTask":
            seen_at.append(time.perf_counter())
            task_id = last.output.split("Claimed task ", 1)[-1].split()[0].rstrip(".:")
            return ScriptedModel.tool_call("completeTask", {"task_id": task_id, "result": "ok"})
        done.set()
        return "done"

    runtime = TeamRuntime(mine, lease_ttl=5.0, poll=30.0)
    out = Samples()
    with tempfile.TemporaryDirectory() as tmp:
        builder = MemberBuilder(
            store=mine,
            specs=load_pool(SPECS),
            client_factory=lambda s, c: _TimedClient(s, c),
            workspace=Path(tmp),
            root=Path(tmp),
            model=ScriptedModel(member),
        )
        runtime.watch(TeamRef(ctx, team.id, builder))
        try:
            await anyio.sleep(0.3)  # the runtime starts and subscribes
            for i in range(n):
                # the direct task first: the runtime's step its assignment signals ends before
                # anything is timed (it ran during the direct claim before: a slower baseline)
                mine_task = await lead.assign_task(team.id, f"direct {i}", assignee="direct")
                await anyio.sleep(0.05)
                seen = len(seen_at)
                done = anyio.Event()
                await lead.assign_task(team.id, f"task {i}", assignee="reviewer")
                t0 = time.perf_counter()
                with anyio.fail_after(10):
                    await done.wait()
                out.committed.append(committed_at[seen] - t0)
                out.seen.append(seen_at[seen] - t0)
                await anyio.sleep(0.05)  # the member's turn ends, it goes idle
                t0 = time.perf_counter()
                got = await board.claim_next("direct", 60.0)
                out.direct.append(time.perf_counter() - t0)
                assert got is not None and got.id == mine_task.id
                await board.complete("direct", got.id, "ok")
        finally:
            await runtime.aclose()
    return out


async def _backend(name: str, url: str, n: int, rounds: int) -> tuple[list[list[str]], list[str]]:
    rows: list[list[str]] = []
    committed: list[float] = []
    seen: list[float] = []
    for r in range(rounds):
        async with _stores(url) as (mine, theirs):
            got = await _round(mine, theirs, n)
        direct = percentile(got.direct, 50)
        committed.append(percentile(got.committed, 50) / direct)
        seen.append(percentile(got.seen, 50) / direct)
        rows.append(
            [
                name,
                str(r + 1),
                ms(percentile(got.committed, 50)),
                ms(percentile(got.seen, 50)),
                ms(direct),
                f"{committed[-1]:.2f}",
                f"{seen[-1]:.2f}",
            ]
        )
    c, s = statistics.median(committed), statistics.median(seen)
    notes = [
        f"{name}: assignment to claim committed p50 <= {TARGET:.0f}x one direct claim: "
        f"{verdict(c <= TARGET)} (median ratio {c:.2f}, range {min(committed):.2f}-"
        f"{max(committed):.2f} over {rounds} rounds)",
        f"{name}: assignment to the claim seen by the model: median ratio {s:.2f} "
        f"(range {min(seen):.2f}-{max(seen):.2f}; no target)",
    ]
    return rows, notes


async def run(fast: bool) -> str:
    n, rounds = (3, 1) if fast else (20, 5)
    rows: list[list[str]] = []
    notes: list[str] = []
    for name, url in chosen(BACKENDS):
        got_rows, got_notes = await _backend(name, url, n, rounds)
        rows += got_rows
        notes += got_notes
    head = [
        "backend",
        "round",
        "to claim committed p50",
        "to claim seen by model p50",
        "direct claim p50",
        "committed / direct",
        "seen / direct",
    ]
    return section(
        "Wake-up to claim on Redis and PostgreSQL (issue 26)",
        __doc__.split("\n\n", 1)[1].replace("\n", " ") if __doc__ else "",
        table(head, rows),
        notes,
    )
