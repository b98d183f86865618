"""Deleting a team while its members run in `agentscope-teams worker` processes (real processes,
over Redis): the workers stop the members' calls, nothing of the team comes back from a late
write of theirs, and the workers go on serving other teams."""

from __future__ import annotations

import signal

import anyio
import pytest
import redis.asyncio as aioredis

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import UnknownTeamError
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient, TaskStatus
from agentscope_teams.teams.lead.state import TeamLeadState

from ..backends import REDIS_URL
from .helpers import eventually, team_id_of
from .scripts import START
from .test_worker import Workers, make_lead, workers  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def named(team_id: str) -> list[str]:
    """Every key of the Redis database that names the team (read raw: unindexed keys too)."""
    conn = aioredis.Redis.from_url(REDIS_URL)
    try:
        return sorted([k.decode() async for k in conn.scan_iter(match=f"*{team_id}*", count=1000)])
    finally:
        await conn.aclose()


def team_state(key: str) -> bool:
    """A key of the team's own (not its members' sessions, kept as every session is)."""
    return "{sessions/" not in key and not key.endswith(":seq")


async def test_deleting_a_team_while_workers_run_its_members(
    tmp_path: object,
    redis: BaseStore,
    ctx: RuntimeContext,
    workers: Workers,  # noqa: F811
) -> None:
    procs = [workers.start(delay=0.5), workers.start(delay=0.5)]
    lead, _ = make_lead(tmp_path, redis)  # type: ignore[arg-type]
    client = LocalTeamClient(redis, ctx)
    found: dict[str, str] = {}

    async def delete_when_busy() -> None:
        async def busy() -> bool:
            team_id = TeamLeadState.peek(await lead.get_agent_state(ctx)).team_id
            if team_id is None:
                return False
            found["team"] = team_id
            tasks = await client.list_tasks(team_id)
            return any(t.status is TaskStatus.IN_PROGRESS for t in tasks)

        await eventually(busy, within=60)
        await client.delete_team(found["team"])  # `team delete` by an operator

    async with anyio.create_task_group() as tg:
        tg.start_soon(delete_when_busy)
        with anyio.fail_after(120):
            await lead.call(START, ctx)  # its waitForTeam meets the deleted team
    team_id = found["team"]
    with pytest.raises(UnknownTeamError):
        await client.get_team(team_id)

    async def settled() -> bool:  # the workers' calls ended; their late writes wrote nothing
        return [k for k in await named(team_id) if team_state(k)] == []

    await anyio.sleep(3.0)  # several member steps (0.5 s each) and leases (1 s) later
    await eventually(settled, within=10)
    assert [k for k in await named(team_id) if team_state(k)] == []
    assert all(p.poll() is None for p in procs), [workers.log(i) for i in range(2)]

    # the workers serve the next team as before
    lead2, _ = make_lead(tmp_path / "second", redis)  # type: ignore[operator]
    second = RuntimeContext(session_id="s-second", user_id="alice", org_id=ctx.org_id)
    with anyio.fail_after(120):
        await lead2.call(START, second)
    tasks = await client.list_tasks(team_id_of(await lead2.get_agent_state(second)))
    assert [t.status for t in tasks] == [TaskStatus.COMPLETED] * 6
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    assert [p.wait(timeout=30) for p in procs] == [0, 0], [workers.log(i) for i in range(2)]
    assert "Traceback" not in workers.log(0) + workers.log(1)
