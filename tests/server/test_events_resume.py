"""Resuming the team event stream from ``Last-Event-ID``: nothing lost, nothing sent twice."""

from __future__ import annotations

import httpx

from .conftest import auth
from .harness import Served
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


def test_an_id_that_is_not_ours_starts_from_the_current_state(
    served: Served, http: httpx.Client
) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    t = f"/api/teams/{team_id}"
    other, _ = make_team(op)
    with http.stream("GET", f"/api/teams/{other}/events", headers=auth(op.token)) as response:
        foreign = _read_ids(response)[-1][1]
    for bad in ("garbage", foreign):
        headers = {**auth(op.token), "Last-Event-ID": bad}
        with http.stream("GET", t + "/events", headers=headers) as response:
            events = _read_ids(response)
        assert events[0][0] == "team" and team_id in events[0][2]
