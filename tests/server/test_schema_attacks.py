"""The control plane under the schema attacks of issue 22 (findings 1 and 2): an unsafe
``result_schema`` is a 422 naming the problem (never a 500, never a request to the ``$ref``), and
the server answers ``/healthz`` while a completion's slow check runs."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from agentscope_teams.schema_guard import SchemaLimits
from agentscope_teams.teams.rules import limits

from ..schema_attacks import ALTERNATING, recording_server
from .conftest import auth
from .harness import Served
from .test_api import Api, error_type, make_team


def test_unsafe_result_schemas_are_422_and_nothing_is_fetched(
    served: Served, http: httpx.Client
) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    member = Api(http, tokens["w1"])  # any member token may create a task
    t = f"/api/teams/{team_id}"
    with recording_server() as (base, requested):
        for schema, says in [
            ({"$ref": "#"}, "leads back to (top level)"),
            ({"$ref": base + "/x.json"}, "is not local"),
            ({"$ref": "file:///dev/zero"}, "is not local"),
            ({"type": "array", "items": {"pattern": "a" * 600}}, "600 characters long"),
        ]:
            r = member("POST", t + "/tasks", {"title": "t", "result_schema": schema})
            assert r.status_code == 422, r.text
            assert error_type(r) == "InvalidSchema"
            assert says in r.json()["error"]["message"]
        assert requested == []
    assert op.ok("GET", t + "/tasks") == []


def test_healthz_answers_while_a_slow_check_runs(
    served: Served, http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "RESULT_SCHEMA_LIMITS", SchemaLimits(check_seconds=1.0))
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    t = f"/api/teams/{team_id}"
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": ALTERNATING}}}
    task = op.ok("POST", t + "/tasks", {"title": "t", "result_schema": schema}, 201)
    w1 = Api(http, tokens["w1"])
    assert w1.ok("POST", t + "/claim", {})["task"]["id"] == task["id"]
    answer: dict[str, Any] = {}

    def complete() -> None:
        with httpx.Client(base_url=served.base_url, timeout=60) as own:
            answer["r"] = own.post(
                f"{t}/tasks/{task['id']}/complete",
                json={"result": "r", "data": {"s": "a" * 40 + "!"}},
                headers=auth(tokens["w1"]),
            )

    worker = threading.Thread(target=complete)
    worker.start()
    healthy = 0
    with httpx.Client(base_url=served.base_url, timeout=5) as probe:
        while worker.is_alive():
            assert probe.get("/healthz").json() == {"status": "ok"}
            healthy += 1 if worker.is_alive() else 0
    worker.join()
    r = answer["r"]
    assert r.status_code == 422 and error_type(r) == "OutputValidationError", r.text
    assert "took longer than 1 s" in r.json()["error"]["message"]
    assert healthy >= 3, healthy  # answered during the check, not after it
    assert op.ok("GET", f"{t}/tasks/{task['id']}")["status"] == "in_progress"
