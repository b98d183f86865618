"""The HTTP API through a real server: every operation, as an operator and as members."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from .conftest import auth
from .harness import Served


class Api:
    """Requests with one token; ``ok`` asserts the status and returns the JSON."""

    def __init__(self, http: httpx.Client, token: str) -> None:
        self.http, self.token = http, token

    def __call__(self, method: str, path: str, body: Any = None, **kw: Any) -> httpx.Response:
        headers = {**auth(self.token), **kw.pop("headers", {})}
        return self.http.request(method, path, json=body, headers=headers, **kw)

    def ok(self, method: str, path: str, body: Any = None, status: int = 200, **kw: Any) -> Any:
        r = self(method, path, body, **kw)
        assert r.status_code == status, r.text
        return r.json() if r.content else None


def error_type(r: httpx.Response) -> str:
    kind: str = r.json()["error"]["type"]
    return kind


def make_team(op: Api) -> tuple[str, dict[str, str]]:
    created = op.ok(
        "POST", "/api/teams", {"name": "crew", "members": [{"name": "w1", "spec": "coder"}]}, 201
    )
    team_id = created["team"]["id"]
    spawned = op.ok("POST", f"/api/teams/{team_id}/members", {"name": "w2", "spec": "tester"}, 201)
    assert spawned["member"]["name"] == "w2" and spawned["member"]["status"] == "spawned"
    return team_id, {"w1": created["tokens"]["w1"], "w2": spawned["token"]}


def test_operator_and_members_run_a_team_end_to_end(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    me = op.ok("GET", "/api/whoami")
    assert (me["kind"], me["user_id"], me["member"]) == ("operator", "alice", None)
    team_id, tokens = make_team(op)
    w1, w2 = Api(http, tokens["w1"]), Api(http, tokens["w2"])
    t = f"/api/teams/{team_id}"
    assert [x["id"] for x in op.ok("GET", "/api/teams")] == [team_id]
    assert [x["id"] for x in w1.ok("GET", "/api/teams")] == [team_id]
    assert w1.ok("GET", "/api/whoami")["member"] == "w1"
    assert [m["name"] for m in w2.ok("GET", t)["members"]] == ["w1", "w2"]

    first = op.ok("POST", t + "/tasks", {"title": "build"}, 201)
    second = op.ok("POST", t + "/tasks", {"title": "test", "blocked_by": [first["id"]]}, 201)
    assert first["history"][0]["actor"] == "lead"
    assert second["blocked_reason"] is None or "waiting" in second["blocked_reason"]
    mine = w2.ok("POST", t + "/tasks", {"title": "w2's own idea", "assignee": "w2"}, 201)
    assert mine["history"][0]["actor"] == "w2"

    claimed = w1.ok("POST", t + "/claim", {})["task"]
    assert (claimed["id"], claimed["owner"], claimed["status"]) == (
        first["id"],
        "w1",
        "in_progress",
    )
    renewed = w1.ok("POST", f"{t}/tasks/{first['id']}/heartbeat", {"lease_seconds": 120})
    assert renewed["lease_seconds"] == 120
    done = w1.ok("POST", f"{t}/tasks/{first['id']}/complete", {"result": "built"})
    assert (done["status"], done["result"]) == ("completed", "built")
    assert op.ok("GET", f"{t}/tasks/{second['id']}")["blocked_reason"] is None

    got = w2.ok("POST", f"{t}/tasks/{second['id']}/claim", {})
    assert got["owner"] == "w2"
    released = w2.ok("POST", f"{t}/tasks/{second['id']}/release", {})
    assert (released["status"], released["owner"]) == ("pending", None)
    w2.ok("POST", f"{t}/tasks/{second['id']}/claim", {"member": "w2"})
    failed = w2.ok("POST", f"{t}/tasks/{second['id']}/fail", {"error": "flaky"})
    assert (failed["status"], failed["error"]) == ("failed", "flaky")
    cancelled = op.ok("POST", f"{t}/tasks/{mine['id']}/cancel", {"reason": "not needed"})
    assert cancelled["status"] == "cancelled"

    statuses = {x["id"]: x["status"] for x in w1.ok("GET", t + "/tasks")}
    assert statuses == {first["id"]: "completed", second["id"]: "failed", mine["id"]: "cancelled"}
    only = op.ok("GET", t + "/tasks", params={"status": "failed"})
    assert [x["id"] for x in only] == [second["id"]]
    assert op.ok("POST", t + "/reap") == []
    assert op.ok("POST", t + "/wait", {"timeout": 1}) == {"done": True}
    assert w1.ok("POST", t + "/claim", {}) == {"task": None}

    member = w1.ok("PUT", f"{t}/members/w1/status", {"status": "running"})
    assert member["status"] == "running"
    assert op.ok("PUT", t + "/status", {"status": "done"})["status"] == "done"


def test_mailbox_sender_is_the_token(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    w1, w2 = Api(http, tokens["w1"]), Api(http, tokens["w2"])
    t = f"/api/teams/{team_id}"
    sent = w1.ok("POST", t + "/messages", {"to": "w2", "content": "hello"}, 201)
    assert (sent["sender"], sent["recipient"], sent["seq"]) == ("w1", "w2", 1)
    lead = op.ok("POST", t + "/messages", {"to": "w2", "content": "from the lead"}, 201)
    assert lead["sender"] == "lead"
    everyone = w2.ok("POST", t + "/broadcast", {"content": "status?"}, 201)
    assert sorted(m["recipient"] for m in everyone) == ["lead", "w1"]

    inbox = w2.ok("GET", t + "/inbox/w2")
    assert [(m["sender"], m["content"]) for m in inbox] == [
        ("w1", "hello"),
        ("lead", "from the lead"),
    ]
    assert [m["content"] for m in w2.ok("GET", t + "/inbox/w2", params={"after": 1})] == [
        "from the lead"
    ]
    assert w2.ok("POST", t + "/inbox/w2/ack", {"cursor": 1}) == {"cursor": 1}
    assert [m["seq"] for m in w2.ok("GET", t + "/inbox/w2/unread")] == [2]
    assert [m["content"] for m in op.ok("GET", t + "/inbox/lead")] == ["status?"]
    assert [m["content"] for m in op.ok("GET", t + "/inbox/w1")] == ["status?"]


def test_openapi_lists_every_route(served: Served, http: httpx.Client) -> None:
    from agentscope_teams.server.app import ENDPOINTS

    doc = http.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    listed = {(path, method.upper()) for path, ops in doc["paths"].items() for method in ops}
    assert {(ep.path, ep.method) for ep in ENDPOINTS} <= listed
    assert ("/api/teams/{team_id}/events", "GET") in listed
    schemas = doc["components"]["schemas"]
    assert {"Task", "Team", "TeamMessage", "CreateTeam", "ErrorBody"} <= set(schemas)
    claim = doc["paths"]["/api/teams/{team_id}/tasks/{task_id}/claim"]["post"]
    assert {"401", "403", "404", "409"} <= set(claim["responses"])
    refs = set(re.findall(r'"#/components/schemas/([^"]+)"', json.dumps(doc)))
    assert refs and refs <= set(schemas), refs - set(schemas)
    ids = [op["operationId"] for ops in doc["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))


def test_dashboard_files_are_served(http: httpx.Client) -> None:
    page = http.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert http.get("/static/app.js").status_code == 200
    assert http.get("/static/style.css").status_code == 200
    assert http.get("/healthz").json() == {"status": "ok"}
