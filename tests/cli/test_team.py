"""``agentscope-teams team list|show|tasks|messages`` against a team built with LocalTeamClient."""

from __future__ import annotations

import json

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store.jsonfile import JsonFileStore
from agentscope_teams.teams import LocalTeamClient, Member

from .conftest import Cli, one_error_line


@pytest.fixture
def team_id(cli: Cli) -> str:
    """alice's team 'review-team' (lead + bob + carol): 3 tasks and 2 messages; bob has a team too."""

    async def seed(store: JsonFileStore) -> str:
        client = LocalTeamClient(store, RuntimeContext(session_id="s", user_id="alice"))
        members = [Member(name="bob", spec="reviewer"), Member(name="carol", spec="perf-tester")]
        team = await client.create_team("review-team", members=members)
        first = await client.assign_task(team.id, "Review app.py", assignee="bob")
        await client.assign_task(team.id, "Review db.py", blocked_by=[first.id])
        third = await client.assign_task(team.id, "Profile loops")
        await client.claim_task(team.id, "bob", first.id)
        await client.complete_task(team.id, "bob", first.id, "found 2 bugs")
        await client.claim_task(team.id, "carol", third.id)
        await client.send_message(team.id, "lead", "bob", "please also check tests")
        await client.broadcast_message(team.id, "carol", "profiling started")
        bobs = LocalTeamClient(store, RuntimeContext(session_id="s", user_id="bob"))
        await bobs.create_team("bobs-team")
        return team.id

    return cli.with_store(seed)


def test_list(cli: Cli, team_id: str) -> None:
    result = cli("team", "list", "--user", "alice")
    assert result.returncode == 0, result.stderr
    assert team_id in result.stdout and "review-team" in result.stdout
    assert "bobs-team" not in result.stdout
    lines = cli("team", "list", "--user", "bob", "--json").stdout.splitlines()
    assert [json.loads(line)["name"] for line in lines] == ["bobs-team"]
    assert "no teams for the anonymous user" in cli("team", "list").stdout


@pytest.mark.parametrize("ref", ["id", "name"])
def test_show_by_id_or_name(cli: Cli, team_id: str, ref: str) -> None:
    result = cli("team", "show", team_id if ref == "id" else "review-team", "--user", "alice")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"team review-team  {team_id}" in out
    assert "bob" in out and "reviewer" in out and "carol" in out and "perf-tester" in out
    assert "3 tasks: 1 pending, 1 in_progress, 1 completed" in out


def test_tasks(cli: Cli, team_id: str) -> None:
    result = cli("team", "tasks", "review-team", "--user", "alice")
    assert result.returncode == 0, result.stderr
    for text in ("Review app.py", "Review db.py", "Profile loops", "found 2 bugs", "in_progress"):
        assert text in result.stdout
    pending = cli("team", "tasks", team_id, "--user", "alice", "--status", "pending", "--json")
    tasks = [json.loads(line) for line in pending.stdout.splitlines()]
    assert [(t["title"], t["status"]) for t in tasks] == [("Review db.py", "pending")]
    assert cli("team", "tasks", team_id, "--status", "stuck").returncode == 2


def test_messages(cli: Cli, team_id: str) -> None:
    result = cli("team", "messages", team_id, "--user", "alice", "--json")
    assert result.returncode == 0, result.stderr
    got = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted((m["sender"], m["recipient"], m["broadcast"]) for m in got) == [
        ("carol", "bob", True),
        ("carol", "lead", True),
        ("lead", "bob", False),
    ]
    bob = cli("team", "messages", "review-team", "--member", "bob", "--user", "alice")
    assert bob.returncode == 0, bob.stderr
    assert "please also check tests" in bob.stdout and "profiling started" in bob.stdout
    lead = cli("team", "messages", "review-team", "--member", "lead", "--user", "alice")
    assert "please also check tests" not in lead.stdout and "profiling started" in lead.stdout


def test_unknown_team_and_member(cli: Cli, team_id: str) -> None:
    other = cli("team", "show", team_id, "--user", "bob")
    assert other.returncode == 1
    line = one_error_line(other)
    assert f"no team with id or name {team_id!r} for user 'bob'" in line
    assert "`agentscope-teams team list --user bob`" in line
    member = cli("team", "messages", team_id, "--member", "zed", "--user", "alice")
    assert member.returncode == 1
    assert "'zed' is not a member of team" in one_error_line(member)
