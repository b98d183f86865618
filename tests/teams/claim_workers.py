"""Child-process side of ``test_claim_exactly_once`` (imported by spawned processes)."""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from multiprocessing.synchronize import Event
from typing import Any

import anyio

from agentscope_teams.errors import NotTaskOwnerError, TaskStateError
from agentscope_teams.teams import Task, TaskStatus

from ..backends import StoreSpec
from .workers import CHILD_DEADLINE, CtxArgs, client_for

#: Seconds a claimer "works" on a task before completing it.
WORK = 0.005


async def _claim_until_done(
    client: Any,
    team_id: str,
    members: list[str],
    complete: Callable[[str, Task], Awaitable[None]],
    on_empty: Callable[[str], Awaitable[None]],
    pause: float,
) -> None:
    """Each member claims tasks, handing each to ``complete``, until the board has no open
    task; after a claim that found nothing, ``on_empty(member)``, then (tasks still open) a
    ``pause``."""

    async def claimer(member: str) -> None:
        with anyio.fail_after(CHILD_DEADLINE):
            while True:
                task = await client.claim_task(team_id, member)
                if task is None:
                    await on_empty(member)
                    if await client.wait_for_tasks(team_id, timeout=0):
                        return
                    await anyio.sleep(pause)
                    continue
                await complete(member, task)

    async with anyio.create_task_group() as tg:
        for m in members:
            tg.start_soon(claimer, m)


def _report(out: Any, index: int, main: Callable[[], Awaitable[Any]]) -> None:
    """Run ``main`` and put ``(index, True, its result)`` (or the traceback) on ``out``."""
    try:
        out.put((index, True, anyio.run(main)))
    except BaseException:
        out.put((index, False, traceback.format_exc()))


async def _nothing(member: str) -> None:
    """No note of an empty claim."""


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

            async def complete(member: str, task: Task) -> None:
                await anyio.sleep(WORK)
                try:
                    await client.complete_task(team_id, member, task.id, member)
                except (NotTaskOwnerError, TaskStateError):  # too slow (a loaded machine):
                    return  # the lease ran out, another claimer took the task over
                done.append((member, task.id))

            # nothing claimable: the rest are held (maybe by the killed process)
            await _claim_until_done(client, team_id, members, complete, _nothing, 0.1)
        return done

    _report(out, index, main)


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

            async def complete(member: str, task: Task) -> None:
                await client.complete_task(team_id, member, task.id, member)
                done.append((member, task.id))

            async def note_missed(member: str) -> None:
                listed = await client.list_tasks(team_id)
                missed.extend(
                    (member, t.id)
                    for t in listed
                    if t.status is TaskStatus.PENDING and t.assignee == member
                )

            await _claim_until_done(client, team_id, members, complete, note_missed, 0.02)
        return done, missed

    _report(out, index, main)
