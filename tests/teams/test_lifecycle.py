"""When a team's work counts as finished, durations, old records, and pruning (any store)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.message import utcnow
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, Member, MemberStatus, TeamStatus
from agentscope_teams.teams.lifecycle import parse_age, prune_teams, visible, work_finished

pytestmark = pytest.mark.anyio
ALICE = RuntimeContext(session_id="s", user_id="alice")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("7d", 604800),
        ("12h", 43200),
        ("30m", 1800),
        ("45s", 45),
        ("2w", 1209600),
        ("1d12h", 129600),
    ],
)
def test_parse_age(text: str, seconds: float) -> None:
    assert parse_age(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "7", "d", "7 d", "7days", "-1h", "0s", "1y"])
def test_parse_age_rejects(text: str) -> None:
    with pytest.raises(ConfigurationError, match="7d, 12h"):
        parse_age(text)


async def test_work_finished_needs_no_open_task_and_one_completed() -> None:
    async with store_from_url("memory://") as store:
        client = LocalTeamClient(store, ALICE)
        team = await client.create_team("t", members=[Member(name="bob", spec="x")])
        assert not work_finished(await client.list_tasks(team.id))  # no task at all
        first = await client.assign_task(team.id, "one")
        second = await client.assign_task(team.id, "two")
        await client.claim_task(team.id, "bob", first.id)
        await client.fail_task(team.id, "bob", first.id, "no")
        assert not work_finished(await client.list_tasks(team.id))  # "two" is pending
        await client.claim_task(team.id, "bob", second.id)
        assert not work_finished(await client.list_tasks(team.id))  # in progress
        await client.complete_task(team.id, "bob", second.id, "ok")
        assert work_finished(await client.list_tasks(team.id))


async def test_records_without_ended_at_load_and_prune_by_creation(
    store: BaseStore, alice: RuntimeContext
) -> None:
    """A team record from before ``ended_at`` (status ``done``) loads, lists as ended and is
    pruned by its ``created_at``; active teams are never pruned."""
    client = LocalTeamClient(store, alice)
    old = await client.create_team("old", members=[Member(name="bob", spec="x")])
    live = await client.create_team("live")
    key = client._keys(old.id).team()
    entry = await store.get(key)
    assert entry is not None
    record = json.loads(entry.value)
    record.pop("ended_at")
    record["status"] = "done"
    record["created_at"] = (utcnow() - timedelta(days=9)).isoformat()
    await store.put(key, json.dumps(record).encode(), expected_version=entry.version)

    loaded = await client.get_team(old.id)
    assert loaded.status is TeamStatus.DONE and loaded.ended_at is None
    teams = await client.list_teams()
    assert [t.id for t in visible(teams)] == [live.id]
    assert [t.id for t in visible(teams, include_ended=True)] == [old.id, live.id]
    assert [t.id for t in await prune_teams(client, timedelta(days=10))] == []
    assert [t.id for t in await prune_teams(client, timedelta(days=8))] == [old.id]
    assert [t.id for t in await client.list_teams()] == [live.id]


async def test_ending_stops_members_and_keeps_the_first_end(
    store: BaseStore, alice: RuntimeContext
) -> None:
    client = LocalTeamClient(store, alice)
    team = await client.create_team("t", members=[Member(name="bob", spec="x")])
    await client.set_member_status(team.id, "bob", MemberStatus.RUNNING)
    done = await client.set_team_status(team.id, TeamStatus.COMPLETED)
    assert done.ended_at is not None and done.member("bob").status is MemberStatus.STOPPED  # type: ignore[union-attr]
    archived = await client.set_team_status(team.id, TeamStatus.ARCHIVED)
    assert archived.ended_at == done.ended_at  # it ended when it was completed
    active = await client.set_team_status(team.id, TeamStatus.ACTIVE)
    assert active.ended_at is None


class SpawnBeforeDeleteMark(InMemoryStore):
    """Spawns ``carol`` and messages her just before the first write that marks a team deleted
    (another caller's spawnMember landing between delete_team's read and its mark)."""

    def __init__(self) -> None:
        super().__init__()
        self.team_id: str | None = None

    async def put(self, key: Any, value: bytes, **kwargs: Any) -> int:
        if self.team_id is not None and b'"status":"deleted"' in value:
            team_id, self.team_id = self.team_id, None
            other = LocalTeamClient(self, ALICE)
            await other.spawn_member(team_id, "carol", "x")
            await other.send_message(team_id, "bob", "carol", "hello")
        return await super().put(key, value, **kwargs)


async def test_delete_removes_the_inbox_of_a_member_spawned_while_it_began() -> None:
    """delete_team removes the inboxes of the members of the record it marked deleted, not of
    the record it read before: a member spawned in between left its inbox behind for good."""
    store = SpawnBeforeDeleteMark()
    client = LocalTeamClient(store, ALICE)
    team = await client.create_team("t", members=[Member(name="bob", spec="x")])
    store.team_id = team.id
    await client.delete_team(team.id)
    assert store.team_id is None  # the spawn ran
    assert await store.read(client._keys(team.id).inbox("carol")) == []
