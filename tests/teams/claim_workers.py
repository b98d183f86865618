"""Child-process side of ``test_claim_exactly_once`` (imported by spawned processes)."""

from __future__ import annotations

import traceback
from multiprocessing.synchronize import Event
from typing import Any

import anyio

from agentscope_teams.errors import NotTaskOwnerError, TaskStateError
from agentscope_teams.teams import TaskStatus

from ..backends import StoreSpec
from .workers import CHILD_DEADLINE, CtxArgs, client_for

#: Seconds a claimer "works" on a task before completing it.
WORK = 0.005


def drain(
    spec: StoreSpec,
    ctx: CtxArgs,
    team_id: str,
    members: list[str],
    lease: float,
    out: Any,
    index: int,
) -> None:
    """Claim and complete tasks with short leases until the board has no open task; puts
    ``(index, True, [(member, task id) completed])`` (or the traceback) on ``out``."""

    async def main() -> list[tuple[str, str]]:
        done: list[tuple[str, str]] = []
        async with spec.open() as store:
            client = client_for(store, ctx, task_lease=lease)

            async def claimer(member: str) -> None:
                with anyio.fail_after(CHILD_DEADLINE):
                    while True:
                        task = await client.claim_task(team_id, member)
                        if task is None:  # the rest are held (maybe by the killed process)
                            if await client.wait_for_tasks(team_id, timeout=0):
                                return
                            await anyio.sleep(0.1)
                            continue
                        await anyio.sleep(WORK)
                        try:
                            await client.complete_task(team_id, member, task.id, member)
                        except (NotTaskOwnerError, TaskStateError):  # too slow (a loaded machine):
                            continue  # the lease ran out, another claimer took the task over
                        done.append((member, task.id))

            async with anyio.create_task_group() as tg:
                for m in members:
                    tg.start_soon(claimer, m)
        return done

    try:
        out.put((index, True, anyio.run(main)))
    except BaseException:
        out.put((index, False, traceback.format_exc()))


def hold(
    spec: StoreSpec, ctx: CtxArgs, team_id: str, members: list[str], lease: float, held: Event
) -> None:
    """Every member claims one task and keeps it (never completes); ``held`` is set once all
    hold one. The test then SIGKILLs this process."""

    async def main() -> None:
        async with spec.open() as store:
            client = client_for(store, ctx, task_lease=lease)
            count = 0

            async def claimer(member: str) -> None:
                nonlocal count
                # the tasks exist before this process starts: there is one for every member (a
                # claim may still find none while another claimer's locking read holds them)
                task = None
                while task is None:
                    task = await client.claim_task(team_id, member)
                    if task is None:
                        await anyio.sleep(0.01)
                count += 1
                if count == len(members):
                    held.set()
                await anyio.sleep(CHILD_DEADLINE)

            async with anyio.create_task_group() as tg:
                for m in members:
                    tg.start_soon(claimer, m)

    anyio.run(main)


def drain_routed(
    spec: StoreSpec, ctx: CtxArgs, team_id: str, members: list[str], out: Any, index: int
) -> None:
    """Claim and complete tasks (long leases: none expires) until the board has no open task;
    after every claim that found nothing, note the tasks routed to that member still pending
    (only it may take them, one claim at a time: each is a claimable task its claim missed).
    Puts ``(index, True, ([(member, task id) completed], [(member, task id) missed]))``."""

    async def main() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        done: list[tuple[str, str]] = []
        missed: list[tuple[str, str]] = []
        async with spec.open() as store:
            client = client_for(store, ctx, task_lease=CHILD_DEADLINE)

            async def claimer(member: str) -> None:
                with anyio.fail_after(CHILD_DEADLINE):
                    while True:
                        task = await client.claim_task(team_id, member)
                        if task is None:
                            listed = await client.list_tasks(team_id)
                            missed.extend(
                                (member, t.id)
                                for t in listed
                                if t.status is TaskStatus.PENDING and t.assignee == member
                            )
                            if await client.wait_for_tasks(team_id, timeout=0):
                                return
                            await anyio.sleep(0.02)
                            continue
                        await client.complete_task(team_id, member, task.id, member)
                        done.append((member, task.id))

            async with anyio.create_task_group() as tg:
                for m in members:
                    tg.start_soon(claimer, m)
        return done, missed

    try:
        out.put((index, True, anyio.run(main)))
    except BaseException:
        out.put((index, False, traceback.format_exc()))
