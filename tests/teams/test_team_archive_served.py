"""An ended team leaves the set of teams workers serve, and is served again when an operator
sets it active (``team archive``, ``PUT /api/teams/{id}/status``: both call
``LocalTeamClient.set_team_status``); its board and records stay readable meanwhile."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import TeamError
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient, Member, TeamStatus
from agentscope_teams.teams.directory import TeamRuntimeRecord, get_record, put_record
from agentscope_teams.teams.member.worker import Worker, WorkerConfig

from ..backends import REDIS_URL, unique_namespace
from ..conftest import require_service

pytestmark = pytest.mark.anyio
ALICE = RuntimeContext(session_id="s", user_id="alice", org_id="acme")


@pytest.fixture(params=["memory", "file", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    if request.param == "redis":
        require_service("redis")
        async with store_from_url(REDIS_URL, namespace=unique_namespace()) as s:
            yield s
        return
    url = "memory://" if request.param == "memory" else f"file://{tmp_path / 'store'}"
    async with store_from_url(url) as s:
        yield s


async def served(store: BaseStore) -> list[str]:
    """The team ids a worker of ``store`` serves after a directory scan."""
    return [ref.team_id for ref in await Worker(store, WorkerConfig(specs={})).discover()]


async def workers_team(store: BaseStore) -> tuple[LocalTeamClient, str]:
    client = LocalTeamClient(store, ALICE)
    team = await client.create_team("t", members=[Member(name="a", spec="w")])
    record = TeamRuntimeRecord(
        team_id=team.id, org_id="acme", user_id="alice", lead="lead", mode="workers", workspace="/w"
    )
    await put_record(store, ALICE, record)
    await client.assign_task(team.id, "kept", assignee="a")
    return client, team.id


@pytest.mark.parametrize("status", [TeamStatus.ARCHIVED, TeamStatus.COMPLETED])
async def test_an_archived_team_is_no_longer_served_and_stays_readable(
    store: BaseStore, status: TeamStatus
) -> None:
    client, team_id = await workers_team(store)
    assert await served(store) == [team_id]
    await client.set_team_status(team_id, status)
    assert await served(store) == []
    assert (await client.get_team(team_id)).status is status  # its records stay readable
    assert [t.title for t in await client.list_tasks(team_id)] == ["kept"]


async def test_a_team_set_active_again_is_served_again_as_before(store: BaseStore) -> None:
    client, team_id = await workers_team(store)
    await client.set_team_status(team_id, TeamStatus.ARCHIVED)
    await client.set_team_status(team_id, TeamStatus.ACTIVE)
    assert await served(store) == [team_id]
    record = await get_record(store, ALICE, team_id)
    assert record is not None and (record.mode, record.workspace) == ("workers", "/w")
    await client.set_team_status(team_id, TeamStatus.ACTIVE)  # again: nothing changes
    assert await served(store) == [team_id]


async def test_deleting_an_archived_team_leaves_nothing_to_serve_again(store: BaseStore) -> None:
    client, team_id = await workers_team(store)
    await client.set_team_status(team_id, TeamStatus.ARCHIVED)
    await client.delete_team(team_id)
    assert await served(store) == []
    assert await store.list_keys(("teams",), limit=10) == []


async def test_a_worker_takes_out_a_record_an_ended_team_left_in_the_directory(
    store: BaseStore,
) -> None:
    """A team archived by a version that left its record in the directory: the first worker step
    that reads it ended takes the record out, and later steps do not read it again."""
    client, team_id = await workers_team(store)
    await client.set_team_status(team_id, TeamStatus.ARCHIVED)
    record = await get_record(store, ALICE, team_id) or TeamRuntimeRecord.model_validate(
        {"team_id": team_id, "org_id": "acme", "user_id": "alice", "lead": "lead", "mode": "any"}
    )
    await put_record(store, ALICE, record)  # as a process from before the change left it
    worker = Worker(store, WorkerConfig(specs={}))
    await worker.runtime.step()
    assert await get_record(store, ALICE, team_id) is None
    assert worker.runtime._discovered == {}  # the next steps read nothing of it
    await client.set_team_status(team_id, TeamStatus.ACTIVE)
    assert await served(store) == [team_id]


@pytest.mark.parametrize("status", [TeamStatus.ARCHIVED, TeamStatus.COMPLETED])
async def test_an_ended_team_takes_no_claim_or_new_task_but_its_held_task_finishes(
    store: BaseStore, status: TeamStatus
) -> None:
    client = LocalTeamClient(store, ALICE)
    team = await client.create_team("t", members=[Member(name="a", spec="w")])
    held = await client.assign_task(team.id, "held", assignee="a")
    await client.assign_task(team.id, "left")
    assert (await client.claim_task(team.id, "a", held.id)) is not None
    await client.set_team_status(team.id, status)
    with pytest.raises(TeamError, match=r"has ended.*no longer claimed"):
        await client.claim_task(team.id, "a")
    with pytest.raises(TeamError, match=r"has ended.*no task was added"):
        await client.assign_task(team.id, "more")
    done = await client.complete_task(team.id, "a", held.id, "result")  # its holder finishes it
    assert done.status.value == "completed"
    await client.set_team_status(team.id, TeamStatus.ACTIVE)  # set active again: claimed again
    left = await client.claim_task(team.id, "a")
    assert left is not None and left.title == "left"
