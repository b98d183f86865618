"""One visibility rule for every per-team route, the event stream included (issue 12, defect 5).

A team of another user or org, an id that never existed and a deleted team all answer 404
``UnknownTeamError`` exactly like ``GET /api/teams/{id}``; a member token of another team gets 403.
"""

from __future__ import annotations

import re

import httpx
import pytest

from agentscope_teams.server.app import ENDPOINTS
from agentscope_teams.server.events import PATH as EVENTS

from .conftest import auth
from .harness import Served, serve
from .test_api import Api, error_type, make_team

PER_TEAM = sorted(
    {(ep.method, ep.path) for ep in ENDPOINTS if "{team_id}" in ep.path} | {("GET", EVENTS)}
)


def concrete(path: str, team_id: str) -> str:
    values = {"team_id": team_id, "task_id": "t-1", "name": "w1", "member": "w1"}
    return re.sub(r"{(\w+)}", lambda m: values[m.group(1)], path)


def expect_unknown_team(api: Api, team_id: str) -> None:
    for method, path in PER_TEAM:
        r = api(method, concrete(path, team_id), {} if method in ("POST", "PUT") else None)
        assert r.status_code == 404, (method, path, r.text)
        assert error_type(r) == "UnknownTeamError", (method, path)


def test_unknown_and_foreign_teams_are_404_on_every_route(
    served: Served, http: httpx.Client
) -> None:
    alice, bob = Api(http, served.tokens["alice"]), Api(http, served.tokens["bob"])
    team_id, _ = make_team(alice)
    expect_unknown_team(alice, "team-never-existed")
    expect_unknown_team(bob, team_id)
    assert alice.ok("GET", f"/api/teams/{team_id}")["id"] == team_id  # nothing was changed


def test_another_orgs_team_and_a_deleted_team_are_404(store_url: str, org: str) -> None:
    users = {"alice": (org, "alice"), "mallory": (org + "-other", "alice")}
    with serve(store_url, users) as s, httpx.Client(base_url=s.base_url, timeout=30) as http:
        alice, mallory = Api(http, s.tokens["alice"]), Api(http, s.tokens["mallory"])
        team_id, _ = make_team(alice)
        expect_unknown_team(mallory, team_id)
        alice.ok("DELETE", f"/api/teams/{team_id}", status=204)
        expect_unknown_team(alice, team_id)


@pytest.mark.parametrize("who", ["other user", "unknown id"])
def test_event_stream_of_an_invisible_team_is_404_not_deleted(
    served: Served, http: httpx.Client, who: str
) -> None:
    team_id, _ = make_team(Api(http, served.tokens["alice"]))
    token = served.tokens["bob"] if who == "other user" else served.tokens["alice"]
    target = team_id if who == "other user" else "team-nope"
    r = http.get(f"/api/teams/{target}/events", headers=auth(token))
    assert r.status_code == 404 and error_type(r) == "UnknownTeamError"
    assert "deleted" not in r.text
    same = http.get(f"/api/teams/{target}", headers=auth(token))
    assert (same.status_code, same.json()["error"]["type"]) == (404, "UnknownTeamError")


def test_member_token_of_another_team_is_403_on_every_route(
    served: Served, http: httpx.Client
) -> None:
    op = Api(http, served.tokens["alice"])
    _, tokens = make_team(op)
    other, _ = make_team(op)
    w1 = Api(http, tokens["w1"])
    for method, path in PER_TEAM:
        r = w1(method, concrete(path, other), {} if method in ("POST", "PUT") else None)
        assert r.status_code == 403 and error_type(r) == "ControlPlaneAuthError", (method, path)
