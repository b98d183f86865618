"""Resuming the team event stream from ``Last-Event-ID``: nothing lost, nothing sent twice."""

from __future__ import annotations

import json

import httpx

from .conftest import auth
from .harness import Served, serve
from .sse import SseReader
from .test_api import Api, make_team


def _read_ids(response: httpx.Response) -> list[tuple[str, str, str]]:
    """(event, id, data) of every event until the stream is idle (the first heartbeat)."""
    out: list[tuple[str, str, str]] = []
    name, data, event_id = "message", "", ""
    for line in response.iter_lines():
        if line.startswith(":"):
            if not out:
                continue
            return out
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "" and data:
            out.append((name, event_id, data))
            name, data, event_id = "message", "", ""
    return out


def test_a_resumed_stream_sends_exactly_what_was_missed(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    t = f"/api/teams/{team_id}"
    task = op.ok("POST", t + "/tasks", {"title": "build"}, 201)
    op.ok("POST", t + "/messages", {"to": "w1", "content": "one"}, 201)
    with http.stream("GET", t + "/events", headers=auth(op.token)) as response:
        sse = SseReader(response)
        sse.until(lambda e: e.name == "message" and e.data["content"] == "one")
    # the snapshot, read again with the ids this time
    with http.stream("GET", t + "/events", headers=auth(op.token)) as response:
        snapshot = _read_ids(response)
    names = [n for n, _, _ in snapshot]
    assert names.count("message") == 1 and names.count("task") == 1 and names[0] == "team"
    assert all(event_id for _, event_id, _ in snapshot)
    last = snapshot[-1][1]

    # while disconnected: a claim, two messages, a member status
    w1 = Api(http, tokens["w1"])
    w1.ok("POST", t + "/claim", {})
    w1.ok("POST", t + "/messages", {"to": "w2", "content": "two"}, 201)
    op.ok("POST", t + "/messages", {"to": "w1", "content": "three"}, 201)
    w1.ok("PUT", f"{t}/members/w1/status", {"status": "running"})

    headers = {**auth(op.token), "Last-Event-ID": last}
    with http.stream("GET", t + "/events", headers=headers) as response:
        missed = _read_ids(response)
    kinds = sorted(n for n, _, _ in missed)
    assert kinds == ["member", "message", "message", "task"]
    contents = sorted(d for n, _, d in missed if n == "message")
    assert '"content":"three"' in contents[0] + contents[1] and '"content":"two"' in "".join(
        contents
    )
    assert task["id"] in next(d for n, _, d in missed if n == "task")

    # resuming from the end of that: nothing at all until something changes
    end = missed[-1][1]
    ticket = Api(http, op.token).ok("POST", t + "/events/ticket", status=201)["token"]
    params = {"ticket": ticket, "last_event_id": end}
    with http.stream("GET", t + "/events", params=params) as response:
        sse = SseReader(response)
        op.ok("POST", t + "/messages", {"to": "w2", "content": "four"}, 201)
        event = sse.until(lambda e: e.name != ":")
    assert event.name == "message" and event.data["content"] == "four"
    assert len(sse.seen) == 1


def test_another_teams_id_starts_from_the_current_state(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    t = f"/api/teams/{team_id}"
    other, _ = make_team(op)
    with http.stream("GET", f"/api/teams/{other}/events", headers=auth(op.token)) as response:
        foreign = _read_ids(response)[-1][1]
    headers = {**auth(op.token), "Last-Event-ID": foreign}
    with http.stream("GET", t + "/events", headers=headers) as response:
        events = _read_ids(response)
    assert events[0][0] == "team" and team_id in events[0][2]
    assert [n for n, _, _ in events].count("member") == 2


def test_an_id_this_server_never_sent_is_a_400(served: Served, http: httpx.Client) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    t = f"/api/teams/{team_id}"
    with http.stream("GET", t + "/events", headers=auth(op.token)) as response:
        real = _read_ids(response)[-1][1]
    stream, number = real.split(".")
    forged = {
        "garbage": "is not an id",
        "x" * 2000: "2000 characters long",  # a forged cursor: refused before anything is read
        f"{stream}.{int(number) + 1}": f"names event {int(number) + 1}; it sent {number}",
    }
    for bad, reason in forged.items():
        r = http.get(t + "/events", headers={**auth(op.token), "Last-Event-ID": bad})
        assert r.status_code == 400, r.text
        assert (r.json()["error"]["type"], reason in r.json()["error"]["message"]) == (
            "EventIdError",
            True,
        )
        assert "reconnect without it" in r.json()["error"]["message"]
    ticket = op.ok("POST", t + "/events/ticket", status=201)["token"]
    r = http.get(t + "/events", params={"ticket": ticket, "last_event_id": "garbage"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "EventIdError"


def _take(response: httpx.Response, count: int) -> list[tuple[str, str, str]]:
    """The first ``count`` events of a stream (then the caller disconnects)."""
    out: list[tuple[str, str, str]] = []
    name, data, event_id = "message", "", ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "" and data:
            out.append((name, event_id, data))
            name, data, event_id = "message", "", ""
            if len(out) == count:
                return out
    raise AssertionError(f"the stream ended after {len(out)} events")


def _entity(name: str, data: str) -> tuple[str, str]:
    """What an event is about: (kind, id) of a task, a member, a message or the team."""
    parsed = json.loads(data)
    if name == "task":
        return ("task", parsed["id"])
    if name == "member":
        return ("member", parsed["member"]["name"])
    if name == "message":
        return ("message", f"{parsed['recipient']}#{parsed['seq']}")
    return ("team", parsed["id"])


def test_a_stream_cut_mid_snapshot_resumes_on_another_server_exactly(
    served: Served, http: httpx.Client, org: str
) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    t = f"/api/teams/{team_id}"
    tasks = [op.ok("POST", t + "/tasks", {"title": f"job {i}"}, 201)["id"] for i in range(12)]
    for i in range(5):
        op.ok("POST", t + "/messages", {"to": "w1", "content": f"m{i}"}, 201)
    with http.stream("GET", t + "/events", headers=auth(op.token)) as response:
        before = _take(response, 9)  # team, 2 members, 6 of the 12 tasks: cut mid-snapshot
    assert [n for n, _, _ in before].count("task") == 6

    # while disconnected: a task already sent changes, a new task and a new message
    w1 = Api(http, tokens["w1"])
    claimed = w1.ok("POST", f"{t}/tasks/{tasks[0]}/claim", {})
    late = op.ok("POST", t + "/tasks", {"title": "late"}, 201)["id"]
    op.ok("POST", t + "/messages", {"to": "w2", "content": "late"}, 201)

    # another server process over the same store answers the reconnect
    headers = {**auth(op.token), "Last-Event-ID": before[-1][1]}
    with (
        serve(served.store_url, {"alice": (org, "alice")}) as other,
        httpx.Client(base_url=other.base_url, timeout=30) as http2,
        http2.stream("GET", t + "/events", headers=headers) as response,
    ):
        after = _read_ids(response)

    sent_before = [_entity(n, d) for n, _, d in before]
    sent_after = [_entity(n, d) for n, _, d in after]
    assert len(set(sent_after)) == len(sent_after)  # nothing twice
    # nothing missing: the rest of the snapshot, the claimed task again, the new task and messages
    snapshot = {("task", x) for x in tasks} | {("message", f"w1#{i}") for i in range(1, 6)}
    assert snapshot <= set(sent_before) | set(sent_after)
    again = set(sent_before) & set(sent_after)
    assert again == {("task", tasks[0])}  # sent again only because it changed (claimed)
    assert (
        next(json.loads(d) for n, _, d in after if _entity(n, d) == ("task", tasks[0]))["version"]
        == claimed["version"]
    )
    assert {("task", late), ("message", "w2#1")} <= set(sent_after)
    assert ("team", team_id) not in sent_after and ("member", "w1") not in sent_after
