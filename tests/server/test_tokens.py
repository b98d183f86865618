"""Who may mint a token for whom: only the operator, or the spawner of a brand-new participant.

Re-spawning an existing member is idempotent and returns the member *without* a token (200); it
never mints a token nor revokes the member's current one (issue 12, defect 1).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from agentscope_teams.server import schemas as s
from agentscope_teams.server.app import ENDPOINTS

from .conftest import auth
from .harness import Served
from .test_api import Api, error_type, make_team


def lead_of(op: Api, team_id: str) -> Api:
    token = op.ok("POST", f"/api/teams/{team_id}/members/lead/token", status=201)["token"]
    return Api(op.http, token)


def whoami(http: httpx.Client, token: str) -> httpx.Response:
    return http.get("/api/whoami", headers=auth(token))


def test_lead_cannot_take_over_an_existing_member(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)  # w1 from create_team, w2 spawned
    lead = lead_of(op, team_id)
    t = f"/api/teams/{team_id}"
    for name, spec in (("w1", "coder"), ("w2", "tester")):
        r = lead("POST", t + "/members", {"name": name, "spec": spec})
        assert r.status_code == 200, r.text
        assert r.json()["member"]["name"] == name and r.json()["token"] is None
        assert whoami(http, tokens[name]).json()["member"] == name  # not revoked
    # The operator re-spawning is idempotent too: new tokens come from the token endpoint only.
    r = op("POST", t + "/members", {"name": "w1", "spec": "coder"})
    assert (r.status_code, r.json()["token"]) == (200, None)
    # A different spec, or the lead's own name, is a conflict; nothing is minted or revoked.
    for body in ({"name": "w1", "spec": "other"}, {"name": "lead"}):
        r = lead("POST", t + "/members", body)
        assert r.status_code == 409 and error_type(r) == "TeamError", body
    assert whoami(http, tokens["w1"]).status_code == 200
    assert whoami(http, lead.token).json()["member"] == "lead"
    # The stolen-token attack of the issue: the real member keeps working, the lead acts as itself.
    task = op.ok("POST", t + "/tasks", {"title": "x", "assignee": "w1"}, 201)
    forged = {"member": "w1", "result": "forged"}
    assert lead("POST", f"{t}/tasks/{task['id']}/claim", {"member": "w1"}).status_code == 403
    assert lead("POST", f"{t}/tasks/{task['id']}/complete", forged).status_code == 403
    Api(http, tokens["w1"]).ok("POST", f"{t}/tasks/{task['id']}/claim", {})


def test_a_new_member_gets_exactly_one_token_under_concurrent_spawns(
    served: Served, http: httpx.Client
) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    lead = lead_of(op, team_id)
    path = f"/api/teams/{team_id}/members"
    callers = [op, lead] * 4
    with ThreadPoolExecutor(len(callers)) as pool:
        answers = list(pool.map(lambda a: a("POST", path, {"name": "w3", "spec": "s"}), callers))
    assert sorted(r.status_code for r in answers) == [200] * 7 + [201]
    minted = [r.json()["token"] for r in answers if r.json()["token"] is not None]
    assert len(minted) == 1
    assert whoami(http, minted[0]).json()["member"] == "w3"


def test_only_the_operator_reissues_and_tickets_are_for_oneself(
    served: Served, http: httpx.Client
) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    lead = lead_of(op, team_id)
    t = f"/api/teams/{team_id}"
    for caller in (lead, Api(http, tokens["w1"])):
        for name in ("w1", "w2", "lead"):
            r = caller("POST", f"{t}/members/{name}/token")
            assert r.status_code == 403 and error_type(r) == "ControlPlaneAuthError"
    assert whoami(http, tokens["w2"]).status_code == 200
    # A ticket is issued for the caller itself (see test_events for what it shows) and mints
    # nothing further.
    ticket = Api(http, tokens["w1"]).ok("POST", t + "/events/ticket", {"member": "w2"}, 201)
    assert ticket["expires_in"] > 0
    assert http.post(t + "/events/ticket", headers=auth(ticket["token"])).status_code == 401


def test_every_endpoint_that_returns_a_token_is_reviewed() -> None:
    """A new endpoint answering with a token must be added here, with who may call it."""
    minting = {
        (ep.method, ep.path): ep.access
        for ep in ENDPOINTS
        if ep.response in (s.CreatedTeam, s.SpawnedMember, s.IssuedToken)
    }
    assert minting == {
        ("POST", "/api/teams"): "operator",  # tokens of the new team's members
        ("POST", "/api/teams/{team_id}/members"): "token",  # only a newly created member's
        ("POST", "/api/teams/{team_id}/members/{name}/token"): "operator",
        ("POST", "/api/teams/{team_id}/events/ticket"): "token",  # a ticket for the caller
    }


async def test_client_keeps_the_token_it_has_when_respawning(served: Served) -> None:
    from agentscope_teams.server import ControlPlaneTeamClient
    from agentscope_teams.teams import Member

    async with ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op:
        team = await op.create_team("crew", members=[Member(name="w1", spec="coder")])
        first = op.member_tokens[(team.id, "w1")]
        again = await op.spawn_member(team.id, "w1", "coder")
        assert again.name == "w1" and op.member_tokens[(team.id, "w1")] == first
        async with ControlPlaneTeamClient(served.base_url, first) as w1:
            assert (await w1.whoami()).member == "w1"
