"""The team event stream: snapshot on connect, then task / message / member changes as they happen."""

from __future__ import annotations

import httpx

from .conftest import auth
from .harness import Served
from .sse import Event, SseReader
from .test_api import Api, make_team


def is_task(task_id: str, status: str) -> object:
    return lambda e: e.name == "task" and e.data["id"] == task_id and e.data["status"] == status


def test_operator_stream_follows_the_team(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    t = f"/api/teams/{team_id}"
    first = op.ok("POST", t + "/tasks", {"title": "build"}, 201)
    w1 = Api(http, tokens["w1"])
    with http.stream("GET", t + "/events", headers=auth(op.token)) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        sse = SseReader(response)
        team = sse.until(lambda e: e.name == "team")
        assert team.data["id"] == team_id
        sse.until(lambda e: e.name == "member" and e.data["member"]["name"] == "w2")
        sse.until(is_task(first["id"], "pending"))  # type: ignore[arg-type]

        w1.ok("POST", t + "/claim", {})
        claimed = sse.until(is_task(first["id"], "in_progress"))  # type: ignore[arg-type]
        assert claimed.data["owner"] == "w1"
        assert [h["action"] for h in claimed.data["history"]] == ["created", "claimed"]
        w1.ok("POST", t + "/messages", {"to": "w2", "content": "on it"}, 201)
        msg = sse.until(lambda e: e.name == "message")
        assert (msg.data["sender"], msg.data["recipient"], msg.data["content"]) == (
            "w1",
            "w2",
            "on it",
        )
        w1.ok("PUT", f"{t}/members/w1/status", {"status": "running"})
        member = sse.until(lambda e: e.name == "member" and e.data["member"]["name"] == "w1")
        assert member.data["member"]["status"] == "running"
        w1.ok("POST", f"{t}/tasks/{first['id']}/complete", {"result": "ok"})
        sse.until(is_task(first["id"], "completed"))  # type: ignore[arg-type]
        op.ok("DELETE", t, status=204)
        gone = sse.until(lambda e: e.name == "team" and e.data.get("status") == "deleted")
        assert gone.data == {"id": team_id, "status": "deleted"}
        assert sse.next() is None


def test_member_stream_shows_only_its_own_inbox(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    t = f"/api/teams/{team_id}"
    op.ok("POST", t + "/messages", {"to": "w1", "content": "for w1"}, 201)
    op.ok("POST", t + "/messages", {"to": "w2", "content": "for w2"}, 201)
    ticket = Api(http, tokens["w2"]).ok("POST", t + "/events/ticket", status=201)["token"]
    with http.stream("GET", t + "/events", params={"ticket": ticket}) as response:
        assert response.status_code == 200
        sse = SseReader(response)
        op.ok("POST", t + "/messages", {"to": "w2", "content": "last"}, 201)
        sse.until(lambda e: e.name == "message" and e.data["content"] == "last")
    contents = [e.data["content"] for e in sse.seen if e.name == "message"]
    assert contents == ["for w2", "last"]


def test_idle_stream_sends_heartbeats_and_needs_auth(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    t = f"/api/teams/{team_id}"
    assert http.get(t + "/events").status_code == 401
    assert http.get(t + "/events", params={"ticket": "ast_" + "x" * 43}).status_code == 401
    other, _ = make_team(op)
    r = http.get(f"/api/teams/{other}/events", headers=auth(tokens["w1"]))
    assert r.status_code == 403
    with http.stream("GET", t + "/events", headers=auth(op.token)) as response:
        sse = SseReader(response)
        while sse.comments < 2:
            event: Event | None = sse.next()
            assert event is not None and event.name in (":", "team", "member")


def test_a_store_error_mid_stream_is_an_error_event_then_the_end(
    served: Served, http: httpx.Client
) -> None:
    import json

    import anyio

    from agentscope_teams import RuntimeContext
    from agentscope_teams.keys import TeamKeys
    from agentscope_teams.store import store_from_url

    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    org = op.ok("GET", "/api/whoami")["org_id"]
    key = TeamKeys(
        RuntimeContext(session_id="s", user_id="alice", org_id=org).owner_scope(), team_id
    )

    async def from_the_future() -> None:
        async with store_from_url(served.store_url) as store:
            entry = await store.get(key.team())
            assert entry is not None
            data = {**json.loads(entry.value), "schema_version": 99}
            await store.put(key.team(), json.dumps(data).encode())

    with http.stream("GET", f"/api/teams/{team_id}/events", headers=auth(op.token)) as response:
        sse = SseReader(response)
        sse.until(lambda e: e.name == "team")
        anyio.run(from_the_future)
        error = sse.until(lambda e: e.name == "error")
        assert error.data["type"] == "SchemaVersionError" and "99" in error.data["message"]
        assert sse.next() is None


def test_a_member_waiting_on_the_lead_is_streamed(served: Served, http: httpx.Client) -> None:
    """A plan waiting for approval and a prompt refused for want of an approver change no status,
    yet each sends the member again, with its review record (what the dashboard shows)."""
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    t = f"/api/teams/{team_id}"
    w1, w2 = Api(http, tokens["w1"]), Api(http, tokens["w2"])
    with http.stream("GET", t + "/events", headers=auth(op.token)) as response:
        sse = SseReader(response)
        sse.until(lambda e: e.name == "member" and e.data["member"]["name"] == "w2")
        w1.ok("POST", f"{t}/members/w1/review", {"action": "note_prompt", "tool": "deploy"})
        refused = sse.until(lambda e: e.name == "member" and e.data["member"]["name"] == "w1"
                            and e.data["member"]["permission_prompt"] is not None)  # fmt: skip
        assert refused.data["member"]["permission_prompt"]["tool"] == "deploy"
        w2.ok("POST", f"{t}/members/w2/review", {"action": "request_plan", "plan": "step 1"})
        planned = sse.until(lambda e: e.name == "member" and e.data["member"]["name"] == "w2"
                            and e.data["member"]["plan"] is not None)  # fmt: skip
        assert planned.data["member"]["plan"]["status"] == "pending"
        op.ok("POST", f"{t}/members/w2/review", {"action": "answer_plan", "approve": True})
        approved = sse.until(lambda e: e.name == "member" and e.data["member"]["name"] == "w2"
                             and e.data["member"]["plan"]["status"] == "approved")  # fmt: skip
        assert approved.data["member"]["status"] == "spawned"  # the same status all along


def test_head_of_the_stream_answers_its_headers_and_opens_no_stream(
    served: Served, http: httpx.Client
) -> None:
    """HEAD is the GET without a body: the stream's headers at once, no poll, no resume log,
    and the connection is free for the next request (it was held by a stream that never ended)."""
    import anyio

    from agentscope_teams import RuntimeContext
    from agentscope_teams.keys._family import EVENT_LOG
    from agentscope_teams.store import store_from_url

    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    t = f"/api/teams/{team_id}/events"
    org = op.ok("GET", "/api/whoami")["org_id"]
    scope = RuntimeContext(session_id="s", user_id="alice", org_id=org).owner_scope()

    async def logs() -> list[object]:
        async with store_from_url(served.store_url) as store:
            return list(await store.list_keys(EVENT_LOG.prefix(*scope, team_id)))

    with httpx.Client(base_url=served.base_url, timeout=10) as one_connection:
        head = one_connection.head(t, headers=auth(op.token))
        assert (head.status_code, head.content) == (200, b"")
        assert head.headers["content-type"].startswith("text/event-stream")
        assert head.headers["cache-control"] == "no-cache"
        after = one_connection.get("/healthz")  # the same keep-alive connection
        assert after.status_code == 200
        assert one_connection.head(t).status_code == 401  # authenticated like its GET
        unknown = one_connection.head("/api/teams/nope/events", headers=auth(op.token))
        assert unknown.status_code == 404
    assert anyio.run(logs) == []  # HEAD wrote no resume log
    with http.stream("GET", t, headers=auth(op.token)) as response:  # control: GET streams
        SseReader(response).until(lambda e: e.name == "team")
    assert anyio.run(logs) != []
