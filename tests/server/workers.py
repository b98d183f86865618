"""Child-process side of the multi-process control-plane test (imported by spawned processes)."""

from __future__ import annotations

import multiprocessing as mp
import queue
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.synchronize import Barrier
from typing import Any

import anyio

from agentscope_teams.server import ControlPlaneTeamClient

DEADLINE = 240.0


def claim_all_over_http(
    base_url: str, team_id: str, tokens: dict[str, str]
) -> list[tuple[str, str]]:
    """One claimer per member (each with its own token) claims and completes until none is left."""

    async def main() -> list[tuple[str, str]]:
        log: list[tuple[str, str]] = []

        async def claimer(member: str, token: str) -> None:
            async with ControlPlaneTeamClient(base_url, token) as client:
                while (task := await client.claim_task(team_id, member)) is not None:
                    await client.complete_task(team_id, member, task.id, f"done by {member}")
                    log.append((member, task.id))

        async with anyio.create_task_group() as tg:
            for member, token in tokens.items():
                tg.start_soon(claimer, member, token)
        return log

    return anyio.run(main)


def _child(target: Callable[..., Any], barrier: Barrier, out: Any, index: int, args: Any) -> None:
    try:
        barrier.wait(timeout=DEADLINE)
        out.put((index, True, target(*args)))
    except BaseException:
        out.put((index, False, traceback.format_exc()))


def run_processes(target: Callable[..., Any], arglist: Sequence[tuple[Any, ...]]) -> list[Any]:
    """``target(*args)`` in one spawned process per args, released together; their results."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    barrier = ctx.Barrier(len(arglist))
    procs = [
        ctx.Process(target=_child, args=(target, barrier, out, i, a)) for i, a in enumerate(arglist)
    ]
    for p in procs:
        p.start()
    results: dict[int, Any] = {}
    end = time.monotonic() + DEADLINE
    try:
        while len(results) < len(procs):
            index, ok, value = out.get(timeout=max(end - time.monotonic(), 0.1))
            if not ok:
                raise AssertionError(f"process {index} failed:\n{value}")
            results[index] = value
    except queue.Empty:
        raise AssertionError(f"processes did not finish within {DEADLINE}s") from None
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    return [results[i] for i in range(len(procs))]
