"""What the API answered on Starlette it answers on FastAPI: HEAD of a GET route, the ``Allow``
header of a 405 naming every method of the path, the operation ids and the bearer scheme of the
generated OpenAPI document, and the one validation error format."""

from __future__ import annotations

import httpx

from .harness import Served
from .test_api import Api, make_team


def test_head_is_get_without_a_body(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    headers = {"Authorization": f"Bearer {op.token}"}
    got = http.get(f"/api/teams/{team_id}", headers=headers)
    head = http.head(f"/api/teams/{team_id}", headers=headers)
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-length"] == got.headers["content-length"]
    assert http.head("/api/whoami").status_code == 401  # authenticated like its GET


def test_a_wrong_method_names_every_method_of_the_path(served: Served, http: httpx.Client) -> None:
    r = http.request("PATCH", "/api/teams", headers={"Authorization": "Bearer x"})
    assert r.status_code == 405 and r.json()["error"]["type"] == "MethodNotAllowed"
    assert r.headers["allow"] == "GET, HEAD, POST"


def test_the_generated_document_keeps_ids_and_the_bearer_scheme(http: httpx.Client) -> None:
    doc = http.get("/openapi.json").json()
    ids = {op["operationId"] for ops in doc["paths"].values() for op in ops.values()}
    assert {"api_create_team", "api_claim_next", "mail_api_send", "events_team_events"} <= ids
    assert {"read_api_list_sessions", "mail_api_whoami"} <= ids
    assert doc["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
    assert doc["security"] == [{"bearer": []}]
    create = doc["paths"]["/api/teams"]["post"]
    assert create["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CreateTeam"
    }
    assert create["responses"]["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"
    }


def test_an_invalid_body_is_a_pydantic_validation_error(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    r = op("POST", "/api/teams", {"lead": "x"})
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["type"] == "ValidationError"
    assert error["message"].startswith("1 validation error for CreateTeam\nname\n  Field required")
    assert error["errors"] == [{"field": "name", "message": "Field required"}]


def test_each_problem_of_an_invalid_body_is_listed_by_field(
    served: Served, http: httpx.Client
) -> None:
    op = Api(http, served.tokens["alice"])
    team = op("POST", "/api/teams", {"name": "t"}).json()["team"]
    r = op("POST", f"/api/teams/{team['id']}/tasks", {"title": "", "blocked_by": "secret-x"})
    assert r.status_code == 422
    problems = r.json()["error"]["errors"]
    assert [p["field"] for p in problems] == ["title", "blocked_by"]
    assert "at least 1 character" in problems[0]["message"]
    assert "secret-x" not in str(problems)  # the values sent are not echoed in the list
