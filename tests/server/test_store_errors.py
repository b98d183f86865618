"""Ids the database cannot store, and database errors, at the edge (issue 22, findings 13 and 15).

A task id with NUL used to reach PostgreSQL through the native board queue: the answer was a 500
whose message named the database user, host and name. Now the id is refused where ids are checked
(422 naming ``task_id``), and a database error that does reach an answer or a model's tool result
is shown in its public form (no URL, user, host, database or driver text).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from agentscope_teams import RuntimeContext
from agentscope_teams.errors import StoreBusyError, StoreError, public_message
from agentscope_teams.message import ToolUseBlock
from agentscope_teams.server.errors import error_from_response
from agentscope_teams.server.routing import error_response
from agentscope_teams.store import BaseStore
from agentscope_teams.store.base import Key
from agentscope_teams.store.sql import SqlStore
from agentscope_teams.teams import LocalTeamClient, TaskBoard, TeamKeys
from agentscope_teams.tools import Toolkit, tool

from ..backends import POSTGRES_URL
from ..conftest import require_service
from .harness import Served, serve
from .test_api import Api, make_team

_URL = urlsplit(POSTGRES_URL)
#: What must never reach a client or a model: the user, host and database of the store's URL.
SECRETS = [f"{_URL.username}@", _URL.hostname or "", (_URL.path or "/").strip("/")]


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s and s in text]


@pytest.fixture
def pg_served(org: str) -> Iterator[Served]:
    require_service("postgres")
    with serve(POSTGRES_URL, {"alice": (org, "alice")}) as s:
        yield s


def test_a_task_id_with_nul_is_refused_before_the_database(pg_served: Served) -> None:
    with httpx.Client(base_url=pg_served.base_url, timeout=30) as http:
        op = Api(http, pg_served.tokens["alice"])
        team_id, tokens = make_team(op)
        w1 = Api(http, tokens["w1"])
        t = f"/api/teams/{team_id}"
        calls = [
            (w1, "POST", t + "/claim", {"task_id": "a\x00b"}),
            (w1, "POST", t + "/tasks/a%00b/claim", {}),
            (w1, "POST", t + "/tasks/a%00b/complete", {"result": "x"}),
            (w1, "POST", t + "/tasks/a%00b/fail", {"error": "x"}),
            (w1, "POST", t + "/tasks/a%00b/release", {}),
            (w1, "POST", t + "/tasks/a%00b/heartbeat", {}),
            (op, "POST", t + "/tasks/a%00b/cancel", {}),
            (op, "GET", t + "/tasks/a%00b", None),
        ]
        for api, method, path, body in calls:
            r = api(method, path, body)
            assert r.status_code == 422, (path, r.text)
            error = r.json()["error"]
            assert error["type"] == "ValueError" and "task_id" in error["message"], path
            assert "U+0000" in error["message"] and _leaks(r.text) == [], path


@pytest.fixture
async def pg() -> AsyncIterator[SqlStore]:
    require_service("postgres")
    async with SqlStore(POSTGRES_URL) as store:
        yield store


async def _database_error(store: SqlStore, org: str) -> StoreError:
    """The control: the native queue handed a NUL id, past the board's check. PostgreSQL refuses
    it, and the error's message (for the operator) names the database."""
    ctx = RuntimeContext(session_id="s", user_id="alice", org_id=org)
    team = await LocalTeamClient(store, ctx).create_team("crew")
    board = TaskBoard(store, TeamKeys(ctx.owner_scope(), team.id))
    assert board.queue.native
    with pytest.raises(StoreError) as caught:
        await board.queue.claim("lead", "a\x00b", 60.0, datetime.now(UTC))
    return caught.value


async def test_a_database_error_names_the_database_only_to_the_operator(
    pg: SqlStore, org: str
) -> None:
    exc = await _database_error(pg, org)
    assert _leaks(str(exc)) == [s for s in SECRETS if s]  # the server's log has everything
    shown = public_message(exc)
    assert _leaks(shown) == [] and "PostgreSQL" in shown and "server's log" in shown
    body = error_response(exc).body.decode()
    assert _leaks(body) == [] and "StoreError" in body


async def test_a_tool_that_meets_a_database_error_tells_the_model_no_connection_details(
    pg: SqlStore, org: str
) -> None:
    exc = await _database_error(pg, org)

    @tool
    async def save_note(text: str) -> str:
        """Save a note."""
        raise exc

    result = await Toolkit([save_note]).execute(
        ToolUseBlock(id="c1", name="save_note", input={"text": "x"})
    )
    assert result.is_error and "StoreError" in result.output
    assert _leaks(result.output) == []


class _FailingListings:
    """Forwards to a SqlStore; listing a team's tasks runs a statement PostgreSQL rejects."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def list_keys(self, prefix: Key, **kw: Any) -> list[Key]:
        if "task" in prefix:
            await self.inner._db.run("list", lambda conn: conn.exec_driver_sql("SELECT 1/0"))
        return await self.inner.list_keys(prefix, **kw)


def test_an_answer_to_a_database_error_names_no_database(org: str) -> None:
    require_service("postgres")
    with (
        serve(POSTGRES_URL, {"alice": (org, "alice")}, wrap=_FailingListings) as served,
        httpx.Client(base_url=served.base_url, timeout=30) as http,
    ):
        op = Api(http, served.tokens["alice"])
        team_id, _ = make_team(op)
        r = op("GET", f"/api/teams/{team_id}/tasks")
    assert r.status_code == 500 and r.json()["error"]["type"] == "StoreError"
    assert _leaks(r.text) == [] and "SQLSTATE 22012" in r.text


def test_a_busy_store_is_503_with_retry_after_and_comes_back_as_itself() -> None:
    busy = StoreBusyError(
        "no free connection to postgresql://postgres@db.internal/app within 30 s",
        limit=5,
        waited=30.0,
        retry_after=1.5,
        public="the PostgreSQL store is busy; retry in a moment",
    )
    answer = error_response(busy)
    assert (answer.status_code, answer.headers["retry-after"]) == (503, "2")
    assert "db.internal" not in answer.body.decode()
    rebuilt = error_from_response(503, __import__("json").loads(answer.body), "GET /x")
    assert isinstance(rebuilt, StoreBusyError) and rebuilt.retry_after == 1.5


def test_a_damaged_file_store_record_names_no_path_in_the_answer(
    served: Served, http: httpx.Client
) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    root = Path(urlsplit(served.store_url).path)
    [record] = [p for p in root.rglob("team.json") if p.parent.name == team_id]
    record.write_text("{ not json")
    r = op("GET", f"/api/teams/{team_id}")
    assert r.status_code == 500 and r.json()["error"]["type"] == "StoreError"
    assert "not valid JSON" in r.text and str(root) not in r.text and "team.json" not in r.text
