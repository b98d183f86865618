"""Conflicts, unknown ids and bad input map to documented status codes and error types."""

from __future__ import annotations

import httpx

from .harness import Served
from .test_api import Api, error_type, make_team


def test_conflicts_are_409_with_the_error_type(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    w1, w2 = Api(http, tokens["w1"]), Api(http, tokens["w2"])
    t = f"/api/teams/{team_id}"
    task = op.ok("POST", t + "/tasks", {"title": "x"}, 201)
    w1.ok("POST", f"{t}/tasks/{task['id']}/claim", {})
    r = w2("POST", f"{t}/tasks/{task['id']}/claim", {})
    assert r.status_code == 409 and error_type(r) == "ClaimConflict"
    assert (r.json()["error"]["task_id"], r.json()["error"]["owner"]) == (task["id"], "w1")
    r = w2("POST", f"{t}/tasks/{task['id']}/complete", {"result": "mine!"})
    assert r.status_code == 409 and error_type(r) == "NotTaskOwnerError"
    pending = op.ok("POST", t + "/tasks", {"title": "y"}, 201)
    r = w1("POST", f"{t}/tasks/{pending['id']}/complete", {})
    assert r.status_code == 409 and error_type(r) == "TaskStateError"
    r = op("POST", f"{t}/members", {"name": "w1"})
    assert r.status_code == 409 and error_type(r) == "TeamError"


def test_unknown_ids_are_404(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    t = f"/api/teams/{team_id}"
    assert error_type(op("GET", "/api/teams/team-nope")) == "UnknownTeamError"
    r = op("GET", f"{t}/tasks/t-999")
    assert r.status_code == 404 and error_type(r) == "UnknownTaskError"
    r = Api(http, tokens["w1"])("POST", t + "/messages", {"to": "ghost", "content": "hi"})
    assert r.status_code == 404 and error_type(r) == "UnknownMemberError"
    r = op("POST", t + "/claim", {"member": "ghost"})
    assert r.status_code == 404 and error_type(r) == "UnknownMemberError"
    assert op("GET", "/api/nothing-here").status_code == 404
    assert op("GET", "/api/sessions/agent/none").status_code == 404


def test_bad_input_is_422_and_oversize_is_413(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    t = f"/api/teams/{team_id}"
    assert op("POST", t + "/tasks", {"title": "x", "owner": "me"}).status_code == 422
    assert op("POST", t + "/tasks", {"title": ""}).status_code == 422
    assert op("POST", t + "/claim", {}).status_code == 422  # an operator must name the member
    assert op("POST", "/api/teams", {"name": "x", "lead": " padded "}).status_code == 422
    r = http.post(t + "/tasks", content=b"{not json", headers={"Authorization": op_auth(op)})
    assert r.status_code == 422 and "JSON" in r.json()["error"]["message"]
    assert op("GET", t + "/tasks", params={"status": "bogus"}).status_code == 422
    assert op("GET", t + "/inbox/lead", params={"limit": "-1"}).status_code == 422
    big = {"title": "x", "description": "a" * (1024 * 1024 + 1)}
    assert op("POST", t + "/tasks", big).status_code == 413
    assert [x["title"] for x in op.ok("GET", t + "/tasks")] == []
    assert op("PATCH", t).status_code == 405


def op_auth(api: Api) -> str:
    return f"Bearer {api.token}"
