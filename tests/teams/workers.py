"""Child-process side of the multi-process team tests (imported by spawned processes)."""

from __future__ import annotations

import multiprocessing as mp
import queue
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.synchronize import Barrier, Event
from typing import Any, cast

import anyio

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import ClaimConflict
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient

from ..backends import StoreSpec

CtxArgs = dict[str, str]
CHILD_DEADLINE = 240.0


def context(args: CtxArgs) -> RuntimeContext:
    return RuntimeContext(metadata={}, **args)


def client_for(store: object, ctx: CtxArgs, task_lease: float = 60.0) -> LocalTeamClient:
    return LocalTeamClient(cast(BaseStore, store), context(ctx), task_lease=task_lease)


def _child(target: Callable[..., Any], barrier: Barrier, out: Any, index: int, args: Any) -> None:
    try:
        barrier.wait(timeout=CHILD_DEADLINE)
        out.put((index, True, target(*args)))
    except BaseException:
        out.put((index, False, traceback.format_exc()))


def run_children(target: Callable[..., Any], arglist: Sequence[tuple[Any, ...]]) -> list[Any]:
    """Run ``target(*args)`` in one spawned process per args, started together; return results."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    barrier = ctx.Barrier(len(arglist))
    procs = [
        ctx.Process(target=_child, args=(target, barrier, out, i, args))
        for i, args in enumerate(arglist)
    ]
    for p in procs:
        p.start()
    results: dict[int, Any] = {}
    deadline = time.monotonic() + CHILD_DEADLINE
    try:
        while len(results) < len(procs):
            index, ok, value = out.get(timeout=max(deadline - time.monotonic(), 0.1))
            if not ok:
                raise AssertionError(f"child {index} failed:\n{value}")
            results[index] = value
    except queue.Empty:
        raise AssertionError(f"children did not finish within {CHILD_DEADLINE}s") from None
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    return [results[i] for i in range(len(procs))]


def claim_all(
    spec: StoreSpec, ctx: CtxArgs, team_id: str, members: list[str]
) -> list[tuple[str, str]]:
    """Each member claims and completes tasks until none is left; returns (member, task id)."""

    async def main() -> list[tuple[str, str]]:
        log: list[tuple[str, str]] = []
        async with spec.open() as store:
            client = client_for(store, ctx, task_lease=600)

            async def claimer(member: str) -> None:
                while (task := await client.claim_task(team_id, member)) is not None:
                    await client.complete_task(team_id, member, task.id, f"done by {member}")
                    log.append((member, task.id))

            async with anyio.create_task_group() as tg:
                for m in members:
                    tg.start_soon(claimer, m)
        return log

    return anyio.run(main)


def claim_one(
    spec: StoreSpec, ctx: CtxArgs, team_id: str, task_id: str, members: list[str]
) -> list[tuple[str, str]]:
    """Every member claims the same task at once; returns (member, "won" | "conflict")."""

    async def main() -> list[tuple[str, str]]:
        outcomes: list[tuple[str, str]] = []
        async with spec.open() as store:
            client = client_for(store, ctx, task_lease=600)

            async def claimer(member: str) -> None:
                try:
                    await client.claim_task(team_id, member, task_id)
                    outcomes.append((member, "won"))
                except ClaimConflict:
                    outcomes.append((member, "conflict"))

            async with anyio.create_task_group() as tg:
                for m in members:
                    tg.start_soon(claimer, m)
        return outcomes

    return anyio.run(main)


def claim_and_hang(
    spec: StoreSpec, ctx: CtxArgs, team_id: str, member: str, task_id: str, claimed: Event
) -> None:
    """Claim a task with a 1 s lease, report it, then hang until killed."""

    async def main() -> None:
        async with spec.open() as store:
            client = client_for(store, ctx, task_lease=1)
            await client.claim_task(team_id, member, task_id)
            claimed.set()
            await anyio.sleep(CHILD_DEADLINE)

    anyio.run(main)


def send_many(
    spec: StoreSpec, ctx: CtxArgs, team_id: str, sender: str, to: list[str], count: int
) -> int:
    """Send ``count`` numbered messages to each recipient, then one broadcast."""

    async def main() -> int:
        async with spec.open() as store:
            client = client_for(store, ctx)
            for i in range(count):
                for r in to:
                    await client.send_message(team_id, sender, r, f"{sender}:{i}")
            await client.broadcast_message(team_id, sender, f"{sender}:bye")
        return count

    return anyio.run(main)


def read_and_ack(spec: StoreSpec, ctx: CtxArgs, team_id: str, member: str, limit: int) -> list[str]:
    """Read up to ``limit`` unread messages, acknowledge them, return their contents."""

    async def main() -> list[str]:
        async with spec.open() as store:
            client = client_for(store, ctx)
            msgs = await client.unread(team_id, member, limit=limit)
            if msgs:
                await client.acknowledge(team_id, member, msgs[-1].seq)
            return [m.content for m in msgs]

    return anyio.run(main)
