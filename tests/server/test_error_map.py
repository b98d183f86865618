"""Every class of the library's error tree has an HTTP status and a typed body (issue 12, defect 6).

The tree is walked (every module of the package imported), so a new error class without a status
fails here instead of becoming an anonymous 500 in production.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path

import anyio
import httpx
import pytest

import agentscope_teams
from agentscope_teams import RuntimeContext
from agentscope_teams.errors import (
    AgentScopeTeamsError,
    BudgetExceededError,
    ClaimConflict,
    ControlPlaneAuthError,
    ControlPlaneError,
    MissingDependencyError,
    RateLimitError,
    SchemaVersionError,
    SpecError,
    SpecErrors,
    ValueTooLargeError,
    VersionConflict,
)
from agentscope_teams.keys import SessionAddress, TeamKeys
from agentscope_teams.server.errors import STATUS, error_body, error_from_response, status_for
from agentscope_teams.sessions import SessionConfig, SessionStorage
from agentscope_teams.store import BaseStore, store_from_url

from .harness import Served
from .test_api import Api, error_type, make_team


def library_error_classes() -> list[type[AgentScopeTeamsError]]:
    for info in pkgutil.walk_packages(agentscope_teams.__path__, "agentscope_teams."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    found: set[type[AgentScopeTeamsError]] = set()
    todo: list[type[AgentScopeTeamsError]] = [AgentScopeTeamsError]
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("agentscope_teams") and cls not in found:
            found.add(cls)
            todo.extend(cls.__subclasses__())
    return sorted(found, key=lambda c: c.__name__)


CLASSES = library_error_classes()


def sample(cls: type[AgentScopeTeamsError]) -> AgentScopeTeamsError:
    """An instance with only a message (constructors with required fields are bypassed)."""
    exc = cls.__new__(cls)
    BaseException.__init__(exc, f"a {cls.__name__}")
    return exc


def test_the_walk_sees_the_whole_tree() -> None:
    names = {c.__name__ for c in CLASSES}
    assert {"SchemaVersionError", "SpecErrors", "ModelTimeoutError", "HITLError"} <= names
    assert len(CLASSES) >= 30


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_error_class_has_its_own_status_and_a_typed_body(
    cls: type[AgentScopeTeamsError],
) -> None:
    assert cls in STATUS, f"add {cls.__name__} to agentscope_teams.server.errors.STATUS"
    exc = sample(cls)
    assert 400 <= status_for(exc) < 600
    assert status_for(exc) == STATUS[cls] or isinstance(exc, ControlPlaneError)
    body = error_body(exc)["error"]
    assert (body["type"], body["message"]) == (cls.__name__, f"a {cls.__name__}")
    json.dumps(body, allow_nan=False)
    rebuilt = error_from_response(status_for(exc), error_body(exc), "GET /x")
    assert type(rebuilt) is cls and str(rebuilt) == str(exc)


FIELDED: list[tuple[AgentScopeTeamsError, dict[str, object]]] = [
    (VersionConflict(("teams", "t1"), 3, 4), {"key": ["teams", "t1"], "expected": 3, "found": 4}),
    (ClaimConflict("t-1", "w1"), {"task_id": "t-1", "owner": "w1"}),
    (ValueTooLargeError(("k",), 10, 5), {"key": ["k"], "size": 10, "limit": 5}),
    (SpecError(Path("specs/a.md"), 3, "bad"), {"file": "specs/a.md", "line": 3, "reason": "bad"}),
    (MissingDependencyError("redis", "redis"), {"extra": "redis"}),
    (
        RateLimitError("slow down", status_code=429, code="rate_limit", model="m", body="{}"),
        {"status_code": 429, "code": "rate_limit", "model": "m", "body": "{}", "base_url": None},
    ),
    (ControlPlaneAuthError("no", 401), {"status": 401}),
    (
        BudgetExceededError("spent", budget="team:t", unit="tokens", limit=10.0, used=12.0),
        {"budget": "team:t", "unit": "tokens", "limit": 10.0, "used": 12.0, "over": 2.0},
    ),
]


@pytest.mark.parametrize("exc,fields", FIELDED, ids=lambda x: type(x).__name__)
def test_structured_fields_travel_in_the_body_and_back(
    exc: AgentScopeTeamsError, fields: dict[str, object]
) -> None:
    body = error_body(exc)["error"]
    assert {k: body[k] for k in fields} == fields
    rebuilt = error_from_response(status_for(exc), {"error": body}, "GET /x")
    assert type(rebuilt) is type(exc) and str(rebuilt) == str(exc)
    assert error_body(rebuilt) == {"error": body}


def test_spec_errors_carry_each_problem() -> None:
    exc = SpecErrors([SpecError("a.md", 1, "x"), SpecError("b.md", None, "y")], "specs")
    body = error_body(exc)["error"]
    assert body["errors"] == [
        {"type": "SpecError", "message": "a.md:1: x", "file": "a.md", "line": 1, "reason": "x"},
        {"type": "SpecError", "message": "b.md: y", "file": "b.md", "line": None, "reason": "y"},
    ]
    assert status_for(exc) == 422


def test_unexpected_errors_stay_opaque() -> None:
    body = error_body(RuntimeError("secret internals"))["error"]
    assert body == {"type": "InternalError", "message": body["message"]}
    assert "secret" not in body["message"]
    assert status_for(RecursionError()) == 500


def test_a_newer_record_is_a_typed_answer_not_a_500(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    org = op.ok("GET", "/api/whoami")["org_id"]
    ctx = RuntimeContext(session_id="s", user_id="alice", org_id=org)

    async def from_the_future(store: BaseStore) -> None:
        await SessionStorage(store).upsert_session(
            user_id="alice", org_id=org, agent_id="a", session_id="s1", config=SessionConfig()
        )
        for key in (
            SessionAddress(org, "alice", "a", "s1").key,
            TeamKeys(ctx.owner_scope(), team_id).team(),
        ):
            entry = await store.get(key)
            assert entry is not None
            data = json.loads(entry.value)
            data["schema_version"] = 99
            await store.put(key, json.dumps(data).encode())

    async def tamper() -> None:
        async with store_from_url(served.store_url) as store:
            await from_the_future(store)

    anyio.run(tamper)
    for path in ("/api/sessions/a/s1", f"/api/teams/{team_id}", f"/api/teams/{team_id}/tasks"):
        r = op("GET", path)
        assert r.status_code == STATUS[SchemaVersionError], (path, r.text)
        assert error_type(r) == "SchemaVersionError"
        assert "99" in r.json()["error"]["message"]
