"""``/metrics``, ``/healthz`` and ``/readyz`` of the control plane: counters move by what was done
(a scripted agent call in this process, task transitions through the API), the text parses as
Prometheus exposition, no label carries tenant data, and readiness follows the store."""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.base import Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.store.redis import RedisStore
from agentscope_teams.tracing import metrics

from .harness import Served, serve
from .test_api import Api, make_team

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(http: httpx.Client) -> Samples:
    r = http.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def run_scripted_call(tmp_path: Path) -> None:
    """One agent call: a tool call (glob_files) then an answer, with scripted token usage."""
    model = ScriptedModel(
        [
            ScriptedModel.tool_call(
                "glob_files",
                {"pattern": "*.py"},
                id="c1",
                usage=Usage(input_tokens=11, output_tokens=3),
            ),
            ScriptedModel.text("done", usage=Usage(input_tokens=20, output_tokens=5)),
        ],
        name="metrics-model",
    )
    agent = HarnessAgent("metered", model, workspace=tmp_path / "ws", store=InMemoryStore())
    ctx = RuntimeContext(session_id="secret-session", user_id="tenant-user", org_id="tenant-org")
    anyio.run(agent.call, "go", ctx)


def test_metrics_count_a_scripted_call_and_task_transitions(
    served: Served, http: httpx.Client, tmp_path: Path
) -> None:
    before = scrape(http)
    run_scripted_call(tmp_path)
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    t = f"/api/teams/{team_id}"
    w1 = Api(http, tokens["w1"])
    for title in ("a", "b"):
        op.ok("POST", t + "/tasks", {"title": title}, 201)
    first = w1.ok("POST", t + "/claim", {})["task"]
    w1.ok("POST", f"{t}/tasks/{first['id']}/complete", {"result": "ok"})
    second = w1.ok("POST", t + "/claim", {})["task"]
    w1.ok("POST", f"{t}/tasks/{second['id']}/fail", {"error": "no"})
    after = scrape(http)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    m = {"provider": "", "model": "metrics-model"}
    p = "agentscope_teams_"
    assert delta(p + "model_calls_total", **m, outcome="ok") == 2
    assert delta(p + "model_tokens_total", **m, agent="agent", direction="input") == 31
    assert delta(p + "model_tokens_total", **m, agent="agent", direction="output") == 8
    assert delta(p + "model_call_seconds_count", **m) == 2
    assert delta(p + "model_call_seconds_bucket", **m, le="+Inf") == 2
    assert delta(p + "tool_calls_total", tool="glob_files", outcome="ok") == 1
    assert delta(p + "agent_calls_total", kind="agent", outcome="ok") == 1
    assert value(after, p + "agent_calls_running", kind="agent") == 0
    assert delta(p + "task_events_total", event="claimed") == 2
    assert delta(p + "task_events_total", event="completed") == 1
    assert delta(p + "task_events_total", event="failed") == 1
    # the API's writes went through the file store, the agent's through a memory store: both
    # timed by backend, and none failed
    timed = {dict(k[1])["backend"] for k in after if k[0] == p + "store_operation_seconds_count"}
    assert timed >= {"file", "memory"}, timed
    assert delta(p + "store_operation_seconds_count", backend="file", operation="put") > 0
    assert not [k for k in after if k[0] == p + "store_errors_total" and after[k] > 0]
    text = http.get("/metrics").text
    for tenant_data in ("tenant-user", "tenant-org", "secret-session", "metered", team_id, "w1"):
        assert tenant_data not in text


def test_label_sets_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model naming ever new tools cannot grow the metrics without bound."""
    monkeypatch.setattr(metrics, "MAX_SERIES", 3)
    counter = metrics.Counter("x_total", "test", ("tool",))
    for i in range(10):
        counter.inc(f"made-up-{i}")
    assert len(counter.values) == 4
    assert counter.get(metrics.OTHER) == 7
    assert 'x_total{tool="_other"} 7' in counter.render()


def test_healthz_and_readyz_with_the_store_up(http: httpx.Client) -> None:
    assert http.get("/healthz").json() == {"status": "ok"}
    r = http.get("/readyz")
    assert (r.status_code, r.json()) == (200, {"status": "ok"})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_readyz_is_503_with_an_unreachable_store(store_url: str) -> None:
    """The app serves a Redis store whose server is not there (nothing listens on the port)."""
    url = f"redis://127.0.0.1:{free_port()}/0"
    with (
        serve(store_url, {}, wrap=lambda _: RedisStore(url)) as served,
        httpx.Client(base_url=served.base_url, timeout=30) as http,
    ):
        assert http.get("/healthz").status_code == 200  # alive, not ready
        r = http.get("/readyz")
        assert r.status_code == 503
        assert r.json()["status"] == "unavailable" and "store" in r.json()["reason"]
    with (
        serve(store_url, {}) as control,
        httpx.Client(base_url=control.base_url, timeout=30) as http,
    ):  # the same check over a store that answers
        assert http.get("/readyz").status_code == 200
