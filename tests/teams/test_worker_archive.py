"""Ending a team while `agentscope-teams worker` processes serve it (real processes, over Redis
and the file store). Archived: the workers stop reading it, its board stays readable, and once an
operator sets it active again the workers serve it again. Its lead's session deleted: the team
ends, the workers stop its members, and its open tasks are cancelled."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import TeamError
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient, Member, MemberStatus, TaskStatus, TeamStatus
from agentscope_teams.teams.directory import TeamRuntimeRecord, get_record, put_record

from ..backends import REDIS_URL
from ..conftest import require_service
from .helpers import eventually
from .scripts import SPECS
from .test_lead_session_delete import make_lead, team_of
from .test_worker import Workers, workers  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(params=["redis", "file"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "redis":
        require_service("redis")
        yield REDIS_URL  # the workers' --org keeps them to this test's teams
    else:
        yield f"file://{tmp_path / 'store'}"


async def idle_seconds(team_id: str) -> int:
    """How long ago anything read the team record on Redis (OBJECT IDLETIME)."""
    conn = aioredis.Redis.from_url(REDIS_URL)
    try:
        async for key in conn.scan_iter(match=f"*{team_id}*", count=1000):
            if key.endswith(b"/team"):
                seconds: int = await conn.object("idletime", key)
                return seconds
        raise AssertionError(f"no record of {team_id} on Redis")
    finally:
        await conn.aclose()


async def idle(client: LocalTeamClient, team_id: str) -> bool:
    member = (await client.get_team(team_id)).member("reviewer")
    return member is not None and member.status is MemberStatus.IDLE


async def done(client: LocalTeamClient, team_id: str, task_id: str) -> bool:
    return (await client.get_task(team_id, task_id)).status is TaskStatus.COMPLETED


async def test_an_archived_team_is_left_alone_by_workers_until_it_is_active_again(
    tmp_path: Path,
    store_url: str,
    ctx: RuntimeContext,
    workers: Workers,  # noqa: F811
) -> None:
    async with store_from_url(store_url) as store:
        await run(tmp_path, store, store_url, ctx, workers)


async def run(
    tmp_path: Path, store: BaseStore, url: str, ctx: RuntimeContext, procs: Workers
) -> None:
    client = LocalTeamClient(store, ctx)
    members = [Member(name=name, spec=spec) for name, spec in SPECS.items()]
    team = await client.create_team("t", members=members)
    record = TeamRuntimeRecord(
        team_id=team.id,
        org_id=ctx.org_id,
        user_id=ctx.user_id,
        lead="lead",
        mode="workers",
        workspace=str(tmp_path / "ws"),
        root=str(tmp_path / "ws"),
    )
    await put_record(store, ctx, record)
    proc = procs.start(store=url)
    first = await client.assign_task(team.id, "review app.py", assignee="reviewer")
    await eventually(lambda: done(client, team.id, first.id), within=60)
    await eventually(lambda: idle(client, team.id), within=30)  # its call has ended

    await client.set_team_status(team.id, TeamStatus.ARCHIVED)  # `team archive`
    assert await get_record(store, ctx, team.id) is None
    with pytest.raises(TeamError, match="has ended"):  # no new work for an ended team
        await client.assign_task(team.id, "review db.py", assignee="reviewer")
    await anyio.sleep(2.5)  # many worker steps (0.05 s) and scans later
    if url == REDIS_URL:  # nobody read the ended team's record since the test's own reads
        assert await idle_seconds(team.id) >= 2
    assert [t.title for t in await client.list_tasks(team.id)] == ["review app.py"]

    await client.set_team_status(team.id, TeamStatus.ACTIVE)  # an operator's change of mind
    second = await client.assign_task(team.id, "review db.py", assignee="reviewer")
    await eventually(lambda: done(client, team.id, second.id), within=60)

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, procs.log(0)
    assert "Traceback" not in procs.log(0)
    await client.delete_team(team.id)


async def test_deleting_the_leads_session_stops_the_workers_serving_its_team(
    tmp_path: Path,
    store_url: str,
    ctx: RuntimeContext,
    workers: Workers,  # noqa: F811
) -> None:
    async with store_from_url(store_url) as store:
        proc = workers.start(delay=0.5, store=store_url)
        lead = make_lead(store, tmp_path, [])
        team_id = await team_of(lead, ctx)  # two tasks, one for member "a", left open
        client = LocalTeamClient(store, ctx)

        async def busy() -> bool:
            statuses = [t.status for t in await client.list_tasks(team_id)]
            return TaskStatus.IN_PROGRESS in statuses

        await eventually(busy, within=60)
        assert await lead.delete_session(ctx)
        team = await client.get_team(team_id)
        assert team.status is TeamStatus.COMPLETED
        assert {m.status for m in team.members} == {MemberStatus.STOPPED}
        ends = [t.status for t in await client.list_tasks(team_id)]
        assert TaskStatus.PENDING not in ends and TaskStatus.IN_PROGRESS not in ends, ends
        await anyio.sleep(2.0)  # many worker steps later: nothing of the team moved
        assert [t.status for t in await client.list_tasks(team_id)] == ends
        assert {m.status for m in (await client.get_team(team_id)).members} == {
            MemberStatus.STOPPED
        }
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, workers.log(0)
        assert "Traceback" not in workers.log(0)
        await client.delete_team(team_id)
