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


def test_deep_json_is_refused_with_the_limit_before_parsing(
    served: Served, http: httpx.Client
) -> None:
    from agentscope_teams.server.routing import MAX_JSON_DEPTH

    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    t = f"/api/teams/{team_id}"
    headers = {"Authorization": op_auth(op), "Content-Type": "application/json"}
    for deep in (
        b"[" * 100_000 + b"]" * 100_000,
        b'{"title": ' + b'{"a": ' * 50_000 + b"1" + b"}" * 50_001,
        b"[" * 200_000,  # unbalanced: refused for its depth before the parser sees it
    ):
        r = http.post(t + "/tasks", content=deep, headers=headers)
        assert r.status_code == 422, r.text[:200]
        assert f"{MAX_JSON_DEPTH} levels" in r.json()["error"]["message"]
    # Brackets inside strings are text, and a body at the limit reaches validation.
    text = "[" * 10_000 + '\\"{' * 1000
    body = {"title": "brackets", "description": text}
    assert op.ok("POST", t + "/tasks", body, 201)["description"] == text
    at_limit = {"title": "x", "extra": json_nest(MAX_JSON_DEPTH - 1)}
    r = op("POST", t + "/tasks", at_limit)
    assert r.status_code == 422 and "levels" not in r.json()["error"]["message"]
    r = op("POST", t + "/tasks", {"title": "x", "extra": json_nest(MAX_JSON_DEPTH)})
    assert r.status_code == 422 and f"{MAX_JSON_DEPTH} levels" in r.json()["error"]["message"]


def test_oversize_chunked_body_is_413_without_a_length(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)

    def chunks() -> object:
        yield b'{"title": "'
        for _ in range(300):
            yield b"a" * 4096
        yield b'"}'

    r = http.post(
        f"/api/teams/{team_id}/tasks",
        content=chunks(),  # type: ignore[arg-type]
        headers={"Authorization": op_auth(op)},
    )
    assert r.status_code == 413 and "limit" in r.json()["error"]["message"]


def json_nest(depth: int) -> object:
    """A JSON value nested ``depth`` levels deep (lists)."""
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def test_create_app_refuses_an_absurd_task_lease() -> None:
    import pytest

    from agentscope_teams.errors import ConfigurationError
    from agentscope_teams.server import create_app
    from agentscope_teams.store import InMemoryStore

    for bad in (0, -1, float("inf"), 1e12):
        with pytest.raises(ConfigurationError, match="task_lease"):
            create_app(InMemoryStore(), task_lease=bad)
