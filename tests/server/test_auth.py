"""Identity comes from the token: 401 for missing / forged / replayed tokens, 403 outside the scope."""

from __future__ import annotations

import hashlib
import secrets
import time
from pathlib import Path

import anyio
import httpx

from agentscope_teams.server import issue_operator_token
from agentscope_teams.store import store_from_url

from .conftest import auth
from .harness import Served
from .test_api import Api, error_type, make_team


def test_missing_malformed_and_forged_tokens_get_401(http: httpx.Client) -> None:
    r = http.get("/api/teams")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert error_type(r) == "ControlPlaneAuthError"
    assert http.get("/api/teams", headers={"Authorization": "Basic abc"}).status_code == 401
    forged = "ast_" + secrets.token_urlsafe(32)
    for token in (forged, "not-a-token", forged[:-1], forged + "x"):
        r = http.get("/api/whoami", headers=auth(token))
        assert r.status_code == 401, token


def test_tokens_are_stored_hashed(served: Served, http: httpx.Client, tmp_path: Path) -> None:
    op = Api(http, served.tokens["alice"])
    _, tokens = make_team(op)
    on_disk = b"".join(p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file())
    for token in [served.tokens["alice"], *tokens.values()]:
        assert token.encode() not in on_disk
        assert hashlib.sha256(token.encode()).hexdigest().encode() in on_disk


def test_member_cannot_act_as_another_member(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    w1 = Api(http, tokens["w1"])
    t = f"/api/teams/{team_id}"
    task = op.ok("POST", t + "/tasks", {"title": "x"}, 201)
    r = w1("POST", t + "/claim", {"member": "w2"})
    assert r.status_code == 403 and error_type(r) == "ControlPlaneAuthError"
    r = w1("POST", f"{t}/tasks/{task['id']}/claim", {"member": "lead"})
    assert r.status_code == 403
    assert op.ok("GET", f"{t}/tasks/{task['id']}")["status"] == "pending"
    assert (
        w1("POST", t + "/messages", {"sender": "w2", "to": "lead", "content": "hi"}).status_code
        == 403
    )
    assert w1("GET", t + "/inbox/w2").status_code == 403
    assert w1("POST", t + "/inbox/w2/ack", {"cursor": 1}).status_code == 403
    assert w1("PUT", f"{t}/members/w2/status", {"status": "failed"}).status_code == 403
    assert op.ok("GET", t + "/inbox/lead") == []


def test_member_token_is_confined_to_its_team_and_role(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_a, tokens = make_team(op)
    team_b, _ = make_team(op)
    w1 = Api(http, tokens["w1"])
    assert w1("GET", f"/api/teams/{team_b}").status_code == 403
    assert w1("GET", f"/api/teams/{team_b}/tasks").status_code == 403
    assert w1("POST", f"/api/teams/{team_b}/claim", {}).status_code == 403
    assert w1("POST", "/api/teams", {"name": "mine"}).status_code == 403
    assert w1("POST", f"/api/teams/{team_a}/members", {"name": "w9"}).status_code == 403
    assert w1("DELETE", f"/api/teams/{team_a}").status_code == 403
    assert w1("POST", f"/api/teams/{team_a}/members/w2/token").status_code == 403
    assert w1("GET", "/api/sessions").status_code == 403
    assert w1("GET", "/api/subagent-runs").status_code == 403
    assert [t["id"] for t in w1.ok("GET", "/api/teams")] == [team_a]


def test_lead_token_may_lead(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    t = f"/api/teams/{team_id}"
    lead = Api(http, op.ok("POST", t + "/members/lead/token", status=201)["token"])
    spawned = lead.ok("POST", t + "/members", {"name": "w3"}, 201)
    task = lead.ok("POST", t + "/tasks", {"title": "x", "assignee": "w3"}, 201)
    assert lead.ok("POST", f"{t}/tasks/{task['id']}/cancel", {})["status"] == "cancelled"
    w3 = Api(http, spawned["token"])
    assert w3("POST", f"{t}/tasks/{task['id']}/cancel", {}).status_code == 403
    lead.ok("DELETE", t, status=204)


def test_other_users_teams_are_invisible(served: Served, http: httpx.Client) -> None:
    alice, bob = Api(http, served.tokens["alice"]), Api(http, served.tokens["bob"])
    team_id, _ = make_team(alice)
    assert bob.ok("GET", "/api/teams") == []
    for method, path in [("GET", ""), ("GET", "/tasks"), ("DELETE", "")]:
        r = bob(method, f"/api/teams/{team_id}{path}")
        assert r.status_code == 404 and error_type(r) == "UnknownTeamError", path
    assert bob("POST", f"/api/teams/{team_id}/tasks", {"title": "x"}).status_code == 404
    assert len(alice.ok("GET", "/api/teams")) == 1


def test_tokens_of_a_deleted_team_are_refused(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    w1 = Api(http, tokens["w1"])
    assert w1.ok("GET", "/api/whoami")["member"] == "w1"
    op.ok("DELETE", f"/api/teams/{team_id}", status=204)
    for token in tokens.values():
        r = http.get("/api/whoami", headers=auth(token))
        assert r.status_code == 401 and error_type(r) == "ControlPlaneAuthError"
    assert w1("POST", f"/api/teams/{team_id}/claim", {}).status_code == 401
    assert op("GET", f"/api/teams/{team_id}").status_code == 404


def test_member_token_of_a_team_deleted_behind_the_servers_back(
    served: Served, http: httpx.Client
) -> None:
    from agentscope_teams.context import RuntimeContext
    from agentscope_teams.teams import LocalTeamClient

    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    org = op.ok("GET", "/api/whoami")["org_id"]

    async def delete_directly() -> None:
        async with store_from_url(served.store_url) as store:
            ctx = RuntimeContext(session_id="s", user_id="alice", org_id=org)
            await LocalTeamClient(store, ctx).delete_team(team_id)

    anyio.run(delete_directly)
    assert http.get("/api/whoami", headers=auth(tokens["w1"])).status_code == 401


def test_reissue_and_revoke(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    fresh = op.ok("POST", f"/api/teams/{team_id}/members/w1/token", status=201)["token"]
    assert http.get("/api/whoami", headers=auth(tokens["w1"])).status_code == 401
    assert http.get("/api/whoami", headers=auth(fresh)).json()["member"] == "w1"
    r = op("POST", f"/api/teams/{team_id}/members/nobody/token")
    assert r.status_code == 404 and error_type(r) == "UnknownMemberError"
    http.delete("/api/tokens/current", headers=auth(fresh)).raise_for_status()
    assert http.get("/api/whoami", headers=auth(fresh)).status_code == 401


def test_expired_operator_token(served: Served, http: httpx.Client) -> None:
    """A token works while it lives and is refused once expired (two tokens, so that a slow first
    request on a loaded machine cannot outlive the short one)."""

    async def mint(ttl: float) -> str:
        async with store_from_url(served.store_url) as store:
            return await issue_operator_token(store, None, "carol", ttl=ttl)

    living, short = anyio.run(mint, 60.0), anyio.run(mint, 0.05)
    assert http.get("/api/whoami", headers=auth(living)).json()["user_id"] == "carol"
    time.sleep(0.2)
    assert http.get("/api/whoami", headers=auth(short)).status_code == 401
    assert http.get("/api/whoami", headers=auth(living)).status_code == 200


def test_stream_ticket_is_not_a_bearer_token(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    ticket = op.ok("POST", f"/api/teams/{team_id}/events/ticket", status=201)["token"]
    assert http.get("/api/whoami", headers=auth(ticket)).status_code == 401
    other, _ = make_team(op)
    r = http.get(f"/api/teams/{other}/events", params={"ticket": ticket})
    assert r.status_code == 403
