"""The team lifecycle over HTTP: archive, prune, and listings that leave ended teams out."""

from __future__ import annotations

from datetime import timedelta

import anyio
import httpx

from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import utcnow
from agentscope_teams.server import ControlPlaneTeamClient
from agentscope_teams.store import store_from_url
from agentscope_teams.teams import LocalTeamClient, TeamStatus
from agentscope_teams.teams.directory import TeamRuntimeRecord, put_record, scan_records

from .harness import Served
from .test_api import Api, error_type, make_team


def ended_long_ago(served: Served, org: str, days: int) -> str:
    """A team of alice's completed ``days`` ago, written straight to the served store."""

    async def body() -> str:
        async with store_from_url(served.store_url) as store:
            then = utcnow() - timedelta(days=days)
            ctx = RuntimeContext(session_id="s", org_id=org, user_id="alice")
            client = LocalTeamClient(store, ctx, clock=lambda: then)
            team = await client.create_team("old")
            await client.set_team_status(team.id, TeamStatus.COMPLETED)
            return team.id

    return anyio.run(body)


def ids(teams: list[dict[str, object]]) -> list[object]:
    return [t["id"] for t in teams]


def test_archive_and_listing_by_status(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    other, _ = make_team(op)
    w1 = Api(http, tokens["w1"])
    forbidden = w1("POST", f"/api/teams/{team_id}/archive")
    assert forbidden.status_code == 403, forbidden.text

    archived = op.ok("POST", f"/api/teams/{team_id}/archive")
    assert archived["status"] == "archived" and archived["ended_at"] is not None
    assert {m["status"] for m in archived["members"]} == {"stopped"}
    assert ids(op.ok("GET", "/api/teams")) == [other]
    assert sorted(ids(op.ok("GET", "/api/teams?all=true"))) == sorted([team_id, other])
    assert ids(op.ok("GET", "/api/teams?status=archived")) == [team_id]
    assert ids(op.ok("GET", "/api/teams?status=completed")) == []
    assert op("GET", "/api/teams?status=finished").status_code == 422
    assert ids(w1.ok("GET", "/api/teams")) == [team_id]  # a member still sees its own team

    # the existing status route ends a team too, and makes it active again
    done = op.ok("PUT", f"/api/teams/{other}/status", {"status": "completed"})
    assert done["status"] == "completed" and done["ended_at"] is not None
    assert op.ok("GET", "/api/teams") == []
    again = op.ok("PUT", f"/api/teams/{other}/status", {"status": "active"})
    assert again["status"] == "active" and again["ended_at"] is None


def test_prune_deletes_ended_teams_older_than_the_age(
    served: Served, http: httpx.Client, org: str
) -> None:
    op = Api(http, served.tokens["alice"])
    old = ended_long_ago(served, org, days=10)
    live, tokens = make_team(op)
    recent, _ = make_team(op)
    op.ok("POST", f"/api/teams/{recent}/archive")

    member = Api(http, tokens["w1"])
    assert member("POST", "/api/teams/prune", {"older_than": "7d"}).status_code == 403
    bad = op("POST", "/api/teams/prune", {"older_than": "a week"})
    assert bad.status_code == 422 and "a week" in bad.text, bad.text

    dry = op.ok("POST", "/api/teams/prune", {"older_than": "7d", "dry_run": True})
    assert dry["dry_run"] is True and ids(dry["teams"]) == [old]
    assert old in ids(op.ok("GET", "/api/teams?all=true"))

    pruned = op.ok("POST", "/api/teams/prune", {"older_than": "7d"})
    assert ids(pruned["teams"]) == [old]
    assert sorted(ids(op.ok("GET", "/api/teams?all=true"))) == sorted([live, recent])
    gone = op("GET", f"/api/teams/{old}")
    assert gone.status_code == 404 and error_type(gone) == "UnknownTeamError"
    # bob's prune never sees alice's teams
    bob = Api(http, served.tokens["bob"])
    assert bob.ok("POST", "/api/teams/prune", {"older_than": "1s"})["teams"] == []


def test_the_http_client_lists_ended_teams_as_the_local_client_does(served: Served) -> None:
    """``ControlPlaneTeamClient.list_teams`` is every team, like ``LocalTeamClient.list_teams``;
    ending one through it stops its members."""

    async def body() -> None:
        async with ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op:
            first = await op.create_team("a")
            second = await op.create_team("b")
            done = await op.set_team_status(first.id, TeamStatus.COMPLETED)
            assert done.status is TeamStatus.COMPLETED and done.ended_at is not None
            listed = {t.id: t.status for t in await op.list_teams()}
            assert listed == {first.id: TeamStatus.COMPLETED, second.id: TeamStatus.ACTIVE}

    anyio.run(body)


def test_an_archived_team_leaves_the_workers_and_comes_back_when_active(
    served: Served, http: httpx.Client, org: str
) -> None:
    """``POST .../archive`` (and the status route) take the team out of the team directory, so
    workers stop serving it; ``PUT .../status`` with ``active`` puts it back."""
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    ctx = RuntimeContext(session_id="s", org_id=org, user_id="alice")

    async def in_directory(write: bool = False) -> bool:
        async with store_from_url(served.store_url) as store:
            if write:  # as a lead's createTeam writes it (the HTTP API writes none)
                record = TeamRuntimeRecord(
                    team_id=team_id, org_id=org, user_id="alice", lead="lead", mode="workers"
                )
                await put_record(store, ctx, record)
            return team_id in [r.team_id async for r in scan_records(store)]

    assert anyio.run(in_directory, True)
    op.ok("POST", f"/api/teams/{team_id}/archive")
    assert not anyio.run(in_directory)
    assert op.ok("GET", f"/api/teams/{team_id}")["status"] == "archived"  # still readable
    op.ok("PUT", f"/api/teams/{team_id}/status", {"status": "active"})
    assert anyio.run(in_directory)
    op.ok("PUT", f"/api/teams/{team_id}/status", {"status": "completed"})
    assert not anyio.run(in_directory)
