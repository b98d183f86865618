"""One undecodable record (team, task, message, directory record) never hides the others: every
listing of the team layer names it in ``problems`` and goes on."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import SchemaVersionError
from agentscope_teams.keys import directory_key
from agentscope_teams.sessions import Listing, Unreadable
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient, Member, Team, TeamKeys, Worker, WorkerConfig
from agentscope_teams.teams.directory import TeamRuntimeRecord, put_record, scan_records

pytestmark = pytest.mark.anyio
GARBAGE = b"\x00not json"


@pytest.fixture
async def store() -> AsyncIterator[BaseStore]:
    """The in-memory store: decoding does not depend on the backend."""
    async with store_from_url("memory://") as s:
        yield s


async def crew(client: LocalTeamClient) -> Team:
    return await client.create_team("crew", members=[Member(name="a", spec="w")])


def keys(client: LocalTeamClient, team: Team) -> TeamKeys:
    return client._keys(team.id)


def ids(problems: list[Unreadable]) -> list[str]:
    return [p.id for p in problems]


async def test_list_teams_reports_an_unreadable_team(
    client: LocalTeamClient, store: BaseStore
) -> None:
    first, bad, last = [await client.create_team(n) for n in ("one", "two", "three")]
    await store.put(keys(client, bad).team(), GARBAGE)
    teams = await client.list_teams()
    assert isinstance(teams, Listing)
    assert [t.id for t in teams] == [first.id, last.id]
    assert ids(teams.problems) == [bad.id] and teams.problems[0].kind == "team"
    assert "JSON" in teams.problems[0].reason


async def test_the_board_lists_and_claims_around_an_unreadable_task(
    client: LocalTeamClient, store: BaseStore
) -> None:
    team = await crew(client)
    t1, t2, t3 = [await client.assign_task(team.id, f"t{i}") for i in (1, 2, 3)]
    waiting = await client.assign_task(team.id, "after t2", blocked_by=[t2.id])
    newer = json.loads(t2.to_bytes()) | {"schema_version": 9}
    await store.put(keys(client, team).task(t2.id), json.dumps(newer).encode())

    listed = await client.list_tasks(team.id)
    assert [t.id for t in listed] == [t1.id, t3.id, waiting.id]
    assert ids(listed.problems) == [t2.id] and "schema_version 9" in listed.problems[0].reason
    board = await client.open_board(team.id)
    assert [t.id for t in board] == [t1.id, t3.id, waiting.id]
    assert ids(board.problems) == [t2.id]
    assert {t.id: t.blocked_reason for t in board}[waiting.id] == (
        f"waiting for unfinished task(s) {t2.id!r}"
    )
    claimed = [await client.claim_task(team.id, "a") for _ in range(3)]
    assert [t.id if t else None for t in claimed] == [t1.id, t3.id, None]
    with pytest.raises(SchemaVersionError):  # the task itself, asked for by id, says why
        await client.get_task(team.id, t2.id)
    assert await client.reap_expired(team.id) == []

    await store.put(keys(client, team).task(t2.id), t2.to_bytes())  # repaired: claimable again
    again = await client.claim_task(team.id, "a")
    assert again is not None and again.id == t2.id


async def test_an_unreadable_message_does_not_block_the_inbox(
    client: LocalTeamClient, store: BaseStore
) -> None:
    team = await crew(client)
    await client.send_message(team.id, "lead", "a", "first")
    await store.append(keys(client, team).inbox("a"), GARBAGE)
    await client.send_message(team.id, "lead", "a", "third")
    for read in (client.read_messages, client.unread):
        got = await read(team.id, "a")
        assert [m.content for m in got][::2] == ["first", "third"]
        assert got[1].sender == "" and got[1].seq == 2  # a notice in its place
        assert (
            "1 message in your team inbox (seq 2) could not be read and was skipped"
            in got[1].content
        )
        assert isinstance(got, Listing) and len(got.problems) == 1
        assert got.problems[0].kind == "message" and got.problems[0].id == "2"


async def test_workers_serve_the_teams_around_an_unreadable_directory_record(
    store: BaseStore, alice: RuntimeContext
) -> None:
    for team_id in ("team-1", "team-2", "team-3"):
        record = TeamRuntimeRecord(
            team_id=team_id, org_id=alice.org_id, user_id=alice.user_id, lead="lead", mode="any"
        )
        await put_record(store, alice, record)
    await store.put(directory_key(alice, "team-2"), GARBAGE)
    problems: list[Unreadable] = []
    found = [r.team_id async for r in scan_records(store, problems=problems)]
    assert found == ["team-1", "team-3"] and ids(problems) == ["team-2"]
    worker = Worker(store, WorkerConfig(specs={}))
    assert sorted(r.team_id for r in await worker.discover()) == ["team-1", "team-3"]
