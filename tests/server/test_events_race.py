"""A team's DELETE landing between the reads of one poll of its event stream, or of one request.

The store wrapper (:mod:`.deleting_store`) deletes the team just before a chosen read, so each
race happens every time: the stream must end with the ``deleted`` event (never ``error``), with
every event found before the delete sent once; a request must answer the 404 of the deleted team.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sse_starlette import ServerSentEvent

from agentscope_teams import RuntimeContext
from agentscope_teams.errors import StoreUnavailableError
from agentscope_teams.server.events import TeamWatcher
from agentscope_teams.server.stream_log import StreamCursor, StreamLog
from agentscope_teams.store import BaseStore
from agentscope_teams.store.base import Key
from agentscope_teams.teams import LocalTeamClient, Member

from ..backends import make_spec
from ..conftest import require_service
from .conftest import auth
from .deleting_store import DeletingStore, inbox_read, task_listing, task_read, team_keys
from .harness import Served, serve
from .sse import SseReader
from .test_api import Api, make_team

USER = "alice"


@pytest.fixture(params=["file", "postgres", "redis"])
async def inner(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    require_service(request.param)
    async with make_spec(request.param, tmp_path).open() as store:
        yield store


async def _team(client: LocalTeamClient) -> tuple[str, str]:
    """A team (lead, w1, w2) with one task and one message in every inbox; (team id, task id)."""
    team = await client.create_team("crew", members=[Member(name="w1"), Member(name="w2")])
    task = await client.assign_task(team.id, "build")
    await client.send_message(team.id, "w1", "lead", "to lead")
    await client.send_message(team.id, "lead", "w1", "to w1")
    await client.send_message(team.id, "lead", "w2", "to w2")
    return team.id, task.id


def _watcher(client: LocalTeamClient, store: BaseStore, org: str, team_id: str) -> TeamWatcher:
    log = StreamLog(store, team_keys(org, USER, team_id), 600, StreamCursor())
    return TeamWatcher(client, team_id, None, log)


def _shown(events: list[ServerSentEvent]) -> list[str]:
    """Each event as ``name`` (``name:content`` for a message, ``team:deleted`` for the end)."""
    out = []
    for event in events:
        name, data = event.event, json.loads(str(event.data))
        if name == "message":
            out.append(f"message:{data['content']}")
        elif name == "team" and data.get("status") == "deleted":
            out.append("team:deleted")
        else:
            out.append(str(name))
    return out


SNAPSHOT = ["team", "member", "member"]
CASES = {
    # the DELETE lands ... -> what the poll sends (the rest went with the team)
    "after the team read, before the task listing": [*SNAPSHOT, "team:deleted"],
    "after the task keys were listed, before the tasks were read": [*SNAPSHOT, "team:deleted"],
    "after the lead's inbox, before w1's": [*SNAPSHOT, "task", "message:to lead", "team:deleted"],
}


@pytest.mark.parametrize("case", list(CASES))
async def test_a_delete_between_the_reads_of_a_poll_ends_the_stream(
    inner: BaseStore, org: str, case: str
) -> None:
    racy = DeletingStore(inner)
    ctx = RuntimeContext(session_id="s", user_id=USER, org_id=org)
    client = LocalTeamClient(racy, ctx)  # type: ignore[arg-type]
    team_id, task_id = await _team(client)
    keys = team_keys(org, USER, team_id)
    trigger = {
        "after the team read, before the task listing": task_listing(keys),
        "after the task keys were listed, before the tasks were read": task_read(keys, [task_id]),
        "after the lead's inbox, before w1's": inbox_read(keys, "w1"),
    }[case]
    racy.arm(org, USER, team_id, trigger)
    watcher = _watcher(client, inner, org, team_id)

    events, gone = await watcher.poll()

    assert racy.deletions == 1
    assert (_shown(events), gone) == (CASES[case], True)
    # the stream ends: its last poll logs nothing (no key is written under the deleted team)
    assert not any(e.id for e in events)
    assert await inner.list_keys(team_keys(org, USER, team_id).base) == []
    # a watcher of the deleted team (however it resumed): only the end, once
    again, gone = await _watcher(LocalTeamClient(inner, ctx), inner, org, team_id).poll()
    assert (_shown(again), gone) == (["team:deleted"], True)


async def test_an_inbox_deleted_under_the_last_read_ends_the_stream_at_the_next_poll(
    inner: BaseStore, org: str
) -> None:
    racy = DeletingStore(inner)
    ctx = RuntimeContext(session_id="s", user_id=USER, org_id=org)
    client = LocalTeamClient(racy, ctx)  # type: ignore[arg-type]
    team_id, _ = await _team(client)
    racy.arm(org, USER, team_id, inbox_read(team_keys(org, USER, team_id), "w2"))
    watcher = _watcher(client, inner, org, team_id)

    first, gone = await watcher.poll()
    assert (_shown(first), gone) == (
        [*SNAPSHOT, "task", "message:to lead", "message:to w1"],
        False,
    )
    second, gone = await watcher.poll()
    assert (_shown(second), gone) == (["team:deleted"], True)
    assert racy.deletions == 1


class _TaskListingFails(DeletingStore):
    """Fails every listing of the board of the team at ``tasks_prefix``, as a store gone away."""

    def __init__(self, inner: BaseStore) -> None:
        super().__init__(inner)
        self.tasks_prefix: Key = ()

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        if prefix == self.tasks_prefix:
            raise StoreUnavailableError("the store went away")
        return await self.inner.list_keys(prefix, limit=limit, after=after)


async def test_a_store_error_of_a_team_that_still_exists_is_still_an_error(
    inner: BaseStore, org: str
) -> None:
    failing = _TaskListingFails(inner)
    ctx = RuntimeContext(session_id="s", user_id=USER, org_id=org)
    client = LocalTeamClient(failing, ctx)  # type: ignore[arg-type]
    team_id, _ = await _team(client)
    failing.tasks_prefix = team_keys(org, USER, team_id).tasks_prefix()
    with pytest.raises(StoreUnavailableError, match="went away"):
        await _watcher(client, inner, org, team_id).poll()
    assert (await LocalTeamClient(inner, ctx).get_team(team_id)).status.value == "active"


# --- over HTTP, against a served app whose store deletes the team on cue -----------------------


@pytest.fixture
def racy_served(store_url: str, org: str) -> Iterator[Served]:
    with serve(store_url, {"alice": (org, "alice")}, wrap=DeletingStore) as s:
        yield s


@pytest.fixture
def racy_http(racy_served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=racy_served.base_url, timeout=30) as client:
        yield client


def test_the_stream_says_deleted_when_the_delete_lands_inside_a_poll(
    racy_served: Served, racy_http: httpx.Client, org: str
) -> None:
    op = Api(racy_http, racy_served.tokens["alice"])
    team_id, _ = make_team(op)
    t = f"/api/teams/{team_id}"
    task = op.ok("POST", t + "/tasks", {"title": "build"}, 201)
    racy: DeletingStore = racy_served.store
    with racy_http.stream("GET", t + "/events", headers=auth(op.token)) as response:
        sse = SseReader(response)
        sse.until(lambda e: e.name == "task" and e.data["id"] == task["id"])
        racy.arm(org, "alice", team_id, task_listing(team_keys(org, "alice", team_id)))
        gone = sse.until(lambda e: e.name in ("team", "error") and e.data.get("status") != "active")
        assert sse.next() is None
    assert gone.name == "team" and gone.data == {"id": team_id, "status": "deleted"}
    assert racy.deletions == 1
    assert [e.name for e in sse.seen].count("error") == 0


def test_reads_that_meet_the_delete_answer_the_deleted_team(
    racy_served: Served, racy_http: httpx.Client, org: str
) -> None:
    op = Api(racy_http, racy_served.tokens["alice"])
    racy: DeletingStore = racy_served.store
    reads = {
        "task list": lambda keys, task: ("/tasks", task_read(keys, [task])),
        "one task": lambda keys, task: (f"/tasks/{task}", task_read(keys, [task])),
        "an inbox": lambda keys, task: ("/inbox/w1", inbox_read(keys, "w1")),
        "unread": lambda keys, task: ("/inbox/w1/unread", inbox_read(keys, "w1")),
    }
    for done, (what, read) in enumerate(reads.items(), start=1):
        team_id, _ = make_team(op)
        t = f"/api/teams/{team_id}"
        task = op.ok("POST", t + "/tasks", {"title": "build"}, 201)
        op.ok("POST", t + "/messages", {"to": "w1", "content": "hello"}, 201)
        path, trigger = read(team_keys(org, "alice", team_id), task["id"])
        racy.arm(org, "alice", team_id, trigger)
        r = racy_http.get(t + path, headers=auth(op.token))
        assert racy.deletions == done, what
        assert r.status_code == 404, (what, r.status_code, r.text)
        error = r.json()["error"]
        assert error["type"] == "UnknownTeamError", (what, error)
        assert f"team {team_id!r} was deleted" in error["message"], (what, error)
