"""Child-process side of the Redis Cluster failover test (imported by spawned processes).

A claimer does a task (appends it to its log) only after its claim returned it, then completes it.
When the store is unavailable it waits and tries again; a claim whose answer was lost may still
have succeeded, so the claimer then looks for in-progress tasks it owns and has not done yet
(it holds their lease: nobody else may take them), and does those first.
"""

from __future__ import annotations

import time

import anyio

from agentscope_teams.errors import AgentScopeTeamsError, StoreUnavailableError
from agentscope_teams.store.redis import RedisStore
from agentscope_teams.teams import LocalTeamClient, Task, TaskStatus

from ..backends import StoreSpec
from ..teams.workers import CtxArgs, client_for

#: The failover test's bounds, in seconds, on each step of the outage: until a read sees it, until
#: the cluster is ok again once the failover is let go, until the killed node is back as a synced
#: replica, until a read works again. A store the test opens meanwhile waits up to its
#: ``cluster_setup_timeout`` (15 s) on top.
UNAVAILABLE_WITHIN, FAILOVER_WITHIN, REJOIN_WITHIN, AVAILABLE_WITHIN = 30.0, 30.0, 30.0, 60.0
OUTAGE_BOUND = (
    UNAVAILABLE_WITHIN
    + RedisStore.cluster_setup_timeout
    + FAILOVER_WITHIN
    + REJOIN_WITHIN
    + AVAILABLE_WITHIN
)

#: Seconds a claimed task's lease lasts: longer than the longest outage the test lets pass
#: (:data:`OUTAGE_BOUND`, 165 s) with a margin, so a claimer that keeps retrying its completion
#: through the outage still holds its task when the cluster is back, however loaded the machine.
#: (At 30 s, shorter than those bounds, a slow failover could expire a lease mid-outage and let
#: another member claim a task whose holder was still completing it.)
TASK_LEASE = OUTAGE_BOUND + 30.0


#: One task done: (member, task id, claimed at, its lease's expiry), times as ``time.time()``.
Done = tuple[str, str, float, float]


def _lease_end(task: Task) -> float:
    return task.lease_expires_at.timestamp() if task.lease_expires_at else 0.0


async def _complete(client: LocalTeamClient, team_id: str, member: str, task: Task) -> int:
    """Complete ``task``; through an outage, until the record says it is completed by ``member``.
    Returns how many StoreUnavailableError were seen."""
    unavailable = 0
    while True:
        try:
            await client.complete_task(team_id, member, task.id, f"done by {member}")
            return unavailable
        except StoreUnavailableError:
            unavailable += 1
        except AgentScopeTeamsError:
            pass  # an earlier attempt may have completed it: the record decides
        await anyio.sleep(0.2)
        try:
            now = await client.get_task(team_id, task.id)
        except StoreUnavailableError:
            unavailable += 1
            continue
        if now.status is TaskStatus.COMPLETED:
            assert now.owner == member, (
                f"{task.id} completed by {now.owner}, done by {member} (lease to "
                f"{_lease_end(task):.3f}, seen at {time.time():.3f})"
            )
            return unavailable


async def _mine_not_done(
    client: LocalTeamClient, team_id: str, member: str, done: set[str]
) -> list[Task]:
    tasks = await client.list_tasks(team_id, TaskStatus.IN_PROGRESS)
    return [t for t in tasks if t.owner == member and t.id not in done]


def claim_through_outages(
    spec: StoreSpec, ctx: CtxArgs, team_id: str, members: list[str], procs: int
) -> tuple[list[Done], int]:
    """Each member claims, does and completes tasks until every task is finished.

    No process claims before all ``procs`` processes have their store open (each marks itself
    ready in the store): a process slow to start under load would otherwise find the board
    drained by the others, and the test, which waits for every process to be at work before it
    kills a primary, would wait for ever.

    Returns the log of tasks done (:data:`Done`) and the number of StoreUnavailableError seen. Any
    other error (a raw redis-py exception) fails the child, and so the test.
    """

    async def main() -> tuple[list[Done], int]:
        log: list[Done] = []
        unavailable = 0
        async with spec.open() as store:
            ready = ("failover-ready", team_id)
            await store.put((*ready, members[0]), b"")
            while len(await store.list_keys(ready)) < procs:  # noqa: ASYNC110
                await anyio.sleep(0.05)
            client = client_for(store, ctx, task_lease=TASK_LEASE)

            async def claimer(member: str) -> None:
                nonlocal unavailable
                done: set[str] = set()
                unsure = False
                while True:
                    try:
                        if unsure:  # a lost answer may hide a claim we won
                            todo = await _mine_not_done(client, team_id, member, done)
                            unsure = False
                        else:
                            task = await client.claim_task(team_id, member)
                            todo = [] if task is None else [task]
                            if task is None:
                                if await client.wait_for_tasks(team_id, timeout=0):
                                    return
                                await anyio.sleep(0.2)
                                continue
                    except StoreUnavailableError:
                        unavailable += 1
                        unsure = True
                        await anyio.sleep(0.2)
                        continue
                    for task in todo:  # the work, done once per claim won
                        log.append((member, task.id, time.time(), _lease_end(task)))
                        done.add(task.id)
                        unavailable += await _complete(client, team_id, member, task)

            async with anyio.create_task_group() as tg:
                for m in members:
                    tg.start_soon(claimer, m)
        return log, unavailable

    return anyio.run(main)
