"""``agentscope-teams team delete|archive|prune`` and ``team list --all``, as real subprocesses."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import utcnow
from agentscope_teams.store.jsonfile import JsonFileStore
from agentscope_teams.teams import LocalTeamClient, Member, TeamStatus
from agentscope_teams.teams.directory import TeamRuntimeRecord, put_record, scan_records

from .conftest import REPO, Cli, one_error_line

ALICE = RuntimeContext(session_id="s", user_id="alice")


def seed(cli: Cli) -> dict[str, str]:
    """alice's teams: 'live' (active), 'old-done' (completed 10 days ago), 'recent-done'
    (completed 1 hour ago), 'old-archived' (archived 30 days ago). Names -> ids."""

    async def body(store: JsonFileStore) -> dict[str, str]:
        ids: dict[str, str] = {}
        for name, status, age in [
            ("live", None, None),
            ("old-done", TeamStatus.COMPLETED, timedelta(days=10)),
            ("recent-done", TeamStatus.COMPLETED, timedelta(hours=1)),
            ("old-archived", TeamStatus.ARCHIVED, timedelta(days=30)),
        ]:
            then = utcnow() - (age or timedelta())
            client = LocalTeamClient(store, ALICE, clock=lambda then=then: then)
            team = await client.create_team(name, members=[Member(name="bob", spec="reviewer")])
            if status is not None:
                await client.set_team_status(team.id, status)
            ids[name] = team.id
        return ids

    return cli.with_store(body)


def listed(cli: Cli, *flags: str) -> dict[str, dict[str, object]]:
    result = cli("team", "list", "--user", "alice", "--json", *flags)
    assert result.returncode == 0, result.stderr
    teams = [json.loads(line) for line in result.stdout.splitlines()]
    return {t["name"]: t for t in teams}


def test_list_hides_ended_teams_unless_all_and_shows_the_times(cli: Cli) -> None:
    ids = seed(cli)
    assert list(listed(cli)) == ["live"]
    every = listed(cli, "--all")
    assert sorted(every) == ["live", "old-archived", "old-done", "recent-done"]
    assert every["live"]["ended_at"] is None and every["live"]["status"] == "active"
    assert every["old-done"]["status"] == "completed" and every["old-done"]["ended_at"]
    table = cli("team", "list", "--user", "alice")
    assert table.returncode == 0, table.stderr
    assert ids["live"] in table.stdout and ids["old-done"] not in table.stdout
    assert "ended_at (UTC)" in table.stdout and "3 ended team(s) not shown" in table.stdout
    wide = cli("team", "list", "--user", "alice", "--all")
    assert ids["old-done"] in wide.stdout and "completed" in wide.stdout


def test_archive_ends_a_team_and_delete_removes_it(cli: Cli) -> None:
    ids = seed(cli)
    archived = cli("team", "archive", "live", "--user", "alice")
    assert archived.returncode == 0, archived.stderr
    assert f"archived team 'live' ({ids['live']})" in archived.stdout
    shown = cli("team", "show", "live", "--user", "alice")
    assert "status archived" in shown.stdout and " · ended 20" in shown.stdout
    team = listed(cli, "--all")["live"]
    assert team["status"] == "archived" and team["ended_at"]
    assert [m["status"] for m in team["members"]] == ["stopped"]  # type: ignore[union-attr]
    assert listed(cli) == {}

    deleted = cli("team", "delete", ids["live"], "--user", "alice")
    assert deleted.returncode == 0, deleted.stderr
    assert "live" not in listed(cli, "--all")
    again = cli("team", "delete", ids["live"], "--user", "alice")
    assert again.returncode == 1
    assert "no team with id or name" in one_error_line(again)


def test_prune_deletes_teams_that_ended_long_ago(cli: Cli) -> None:
    ids = seed(cli)
    dry = cli("team", "prune", "--older-than", "7d", "--dry-run", "--user", "alice", "--json")
    assert dry.returncode == 0, dry.stderr
    names = [json.loads(line)["name"] for line in dry.stdout.splitlines()]
    assert names == ["old-done", "old-archived"] or names == ["old-archived", "old-done"]
    assert sorted(listed(cli, "--all")) == ["live", "old-archived", "old-done", "recent-done"]

    pruned = cli("team", "prune", "--older-than", "7d", "--user", "alice")
    assert pruned.returncode == 0, pruned.stderr
    assert "deleted 2 teams" in pruned.stdout
    assert ids["old-done"] in pruned.stdout and ids["old-archived"] in pruned.stdout
    assert sorted(listed(cli, "--all")) == ["live", "recent-done"]
    # an active team is never pruned, however old; a short age takes the recent one
    cli("team", "prune", "--older-than", "30m", "--user", "alice")
    assert sorted(listed(cli, "--all")) == ["live"]
    none = cli("team", "prune", "--older-than", "1h", "--user", "alice")
    assert "no team of user 'alice' ended more than 1h ago" in none.stdout


def test_prune_rejects_a_bad_duration(cli: Cli) -> None:
    for bad in ("7 days", "abc", "0d", "-3h"):
        result = cli("team", "prune", f"--older-than={bad}", "--user", "alice")
        assert result.returncode != 0
        line = one_error_line(result)
        assert repr(bad) in line and "7d, 12h" in line


def test_a_run_that_finishes_its_work_leaves_no_active_team(cli: Cli) -> None:
    from .test_run_scripted import EXAMPLE, _call

    done = _call(cli, EXAMPLE / "script.yaml")
    assert done.returncode == 0, done.stderr
    result = cli("team", "list", "--all", "--json")
    teams = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(t["name"], t["status"]) for t in teams] == [("survey", "completed")]
    assert teams[0]["ended_at"] >= teams[0]["created_at"]
    assert {m["status"] for m in teams[0]["members"]} == {"stopped"}
    active = cli("team", "list")
    assert "no active teams for the anonymous user" in active.stdout


def test_a_review_leaves_its_team_completed(cli: Cli, tmp_path: Path) -> None:
    """``review`` through the CLI on a file store: its team is ``completed`` (not ``active``, not
    the old ``done``) with every member stopped once the command returned."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples" / "sample_project", project)
    done = cli("review", str(project), "--output", str(tmp_path / "review.md"))
    assert done.returncode == 0, done.stderr
    result = cli("team", "list", "--all", "--json")
    teams = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(t["name"], t["status"]) for t in teams] == [("code-review", "completed")]
    assert teams[0]["ended_at"] >= teams[0]["created_at"]
    assert {m["status"] for m in teams[0]["members"]} == {"stopped"}


def test_an_archived_team_leaves_the_team_directory_workers_serve(cli: Cli) -> None:
    """``team archive`` takes the team out of the directory (workers stop serving it); its
    records stay for ``team show``."""

    async def with_record(store: JsonFileStore) -> str:
        team = await LocalTeamClient(store, ALICE).create_team("served")
        record = TeamRuntimeRecord(team_id=team.id, user_id="alice", lead="lead", mode="workers")
        await put_record(store, ALICE, record)
        return team.id

    async def in_directory(store: JsonFileStore) -> list[str]:
        return [r.team_id async for r in scan_records(store)]

    team_id = cli.with_store(with_record)
    assert cli.with_store(in_directory) == [team_id]
    archived = cli("team", "archive", "served", "--user", "alice")
    assert archived.returncode == 0, archived.stderr
    assert cli.with_store(in_directory) == []
    assert "status archived" in cli("team", "show", "served", "--user", "alice").stdout


def test_show_says_why_a_hook_stopped_a_member_and_resume_lifts_it(cli: Cli) -> None:
    ids = seed(cli)

    async def stop(store: JsonFileStore) -> None:
        await LocalTeamClient(store, ALICE).stop_member(
            ids["live"], "bob", "tests are red", event="TaskCompleted"
        )

    cli.with_store(stop)
    shown = cli("team", "show", "live", "--user", "alice")
    assert shown.returncode == 0, shown.stderr
    assert "by a TaskCompleted hook: tests are red" in " ".join(shown.stdout.split())
    resumed = cli("team", "resume", "live", "bob", "--user", "alice")
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed member 'bob'" in resumed.stdout
    [bob] = listed(cli)["live"]["members"]  # type: ignore[misc]
    assert (bob["status"], bob["stop"]) == ("idle", None)
