"""Wake-up to claim on Redis: a task assigned to an idle member until the member has claimed it,
against one direct claim (issue 26, item 4: p50 <= 5x).

The member runs in a ``TeamRuntime`` on its own store connection (push signals, 30 s poll); its
scripted model calls ``claimTask`` when woken and, once it sees the claim's result, completes the
task and ends its turn. A sample is ``assign_task`` returning -> the model's request that carries
the claim's result (the claim done and its step saved). The baseline is one
``TaskBoard.claim_next`` (one script call) of a task assigned to another member, timed alone; the two alternate sample by sample. Reported: p50 of each and the
ratio of the p50s, per round of ``n`` samples.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
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

from .fixtures import REDIS_URL, drop_redis_namespace
from .stats import ms, percentile, section, table, verdict

SPECS = Path(__file__).resolve().parents[1] / "specs"
TARGET = 5.0


def _results(request: ModelRequest) -> list[ToolResultBlock]:
    last = request.messages[-1] if request.messages else None
    return last.tool_results() if last is not None else []


async def _round(mine: BaseStore, theirs: BaseStore, n: int) -> tuple[list[float], list[float]]:
    ctx = RuntimeContext(session_id="bench", user_id=f"wc-{uuid.uuid4().hex[:8]}")
    lead = LocalTeamClient(theirs, ctx)
    team = await lead.create_team("wake", members=[Member(name="direct")])
    await lead.spawn_member(team.id, "reviewer", "reviewer")
    board = TaskBoard(theirs, TeamKeys(ctx.owner_scope(), team.id))
    claimed_at: list[float] = []
    done = anyio.Event()

    def member(request: ModelRequest) -> ModelResponse | str:
        results = _results(request)
        if not results:
            return ScriptedModel.tool_call("claimTask", {})
        last = results[-1]
        if last.name == "claimTask":
            claimed_at.append(time.perf_counter())
            task_id = last.output.split("Claimed task ", 1)[-1].split()[0].rstrip(".:")
            return ScriptedModel.tool_call("completeTask", {"task_id": task_id, "result": "ok"})
        done.set()
        return "done"

    runtime = TeamRuntime(mine, lease_ttl=5.0, poll=30.0)
    wake: list[float] = []
    direct: list[float] = []
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
        try:
            await anyio.sleep(0.3)  # the runtime starts and subscribes
            for i in range(n):
                seen = len(claimed_at)
                done = anyio.Event()
                await lead.assign_task(team.id, f"task {i}", assignee="reviewer")
                t0 = time.perf_counter()
                with anyio.fail_after(10):
                    await done.wait()
                wake.append(claimed_at[seen] - t0)
                await anyio.sleep(0.05)  # the member's turn ends, it goes idle
                mine_task = await lead.assign_task(team.id, f"direct {i}", assignee="direct")
                t0 = time.perf_counter()
                got = await board.claim_next("direct", 60.0)
                direct.append(time.perf_counter() - t0)
                assert got is not None and got.id == mine_task.id
                await board.complete("direct", got.id, "ok")
        finally:
            await runtime.aclose()
    return wake, direct


async def run(fast: bool) -> str:
    n, rounds = (3, 1) if fast else (20, 5)
    rows, ratios = [], []
    all_wake: list[float] = []
    all_direct: list[float] = []
    for r in range(rounds):
        ns = f"bench-wc-{uuid.uuid4().hex[:8]}"
        async with (
            store_from_url(REDIS_URL, namespace=ns) as mine,
            store_from_url(REDIS_URL, namespace=ns) as theirs,
        ):
            wake, direct = await _round(mine, theirs, n)
        await drop_redis_namespace(ns)
        ratio = percentile(wake, 50) / percentile(direct, 50)
        ratios.append(ratio)
        all_wake += wake
        all_direct += direct
        rows.append(
            [str(r + 1), ms(percentile(wake, 50)), ms(percentile(direct, 50)), f"{ratio:.2f}"]
        )
    median = statistics.median(ratios)
    return section(
        "Wake-up to claim on Redis (issue 26)",
        __doc__.split("\n\n", 1)[1].replace("\n", " ") if __doc__ else "",
        table(["round", "wake-up to claim p50", "direct claim p50", "ratio"], rows),
        [
            f"redis: wake-up to claim p50 <= {TARGET:.0f}x one direct claim: "
            f"{verdict(median <= TARGET)} (median ratio {median:.2f}, "
            f"range {min(ratios):.2f}-{max(ratios):.2f} over {rounds} rounds)"
        ],
    )
