"""``serve`` drains on SIGTERM: a request already running finishes, no new connection is taken,
and the process exits 0; past ``--drain-seconds`` the running request is cut and it still exits 0."""

from __future__ import annotations

import re
import signal
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from .test_serve_cli import running


def _start(tmp_path: Path, *extra: str) -> Any:
    store = f"file://{tmp_path / 'store'}"
    return running(tmp_path, "--store", store, "--user", "alice", *extra)


def _team_with_open_task(base: str, token: str) -> str:
    headers = {"Authorization": f"Bearer {token}"}
    team = httpx.post(base + "/api/teams", json={"name": "t"}, headers=headers).json()["team"]
    tasks = f"{base}/api/teams/{team['id']}/tasks"
    assert httpx.post(tasks, json={"title": "open"}, headers=headers).status_code == 201
    return str(team["id"])


def _waiting(
    base: str, token: str, team_id: str, seconds: float
) -> tuple[threading.Thread, dict[str, Any]]:
    """A ``POST .../wait`` of ``seconds`` in a thread; its answer (or error) lands in the dict."""
    out: dict[str, Any] = {}
    started = threading.Event()

    def run() -> None:
        url = f"{base}/api/teams/{team_id}/wait"
        headers = {"Authorization": f"Bearer {token}"}
        try:
            with httpx.Client(timeout=120) as client:
                started.set()
                out["response"] = client.post(url, json={"timeout": seconds}, headers=headers)
        except httpx.HTTPError as exc:
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    started.wait(10)
    return thread, out


def _in_flight(base: str) -> None:
    """Once the server serves one API request (its ``http_requests_running`` gauge)."""
    for _ in range(500):
        text = httpx.get(base + "/metrics").text
        if re.search(r"^agentscope_teams_http_requests_running 1$", text, re.M):
            return
        threading.Event().wait(0.02)
    raise AssertionError("the wait request never reached the server")


def _refuses_new_connections(base: str) -> None:
    """After SIGTERM: ``/readyz`` says 503 while the listener is still open, then no connection."""
    for _ in range(500):
        try:
            status = httpx.get(base + "/readyz", timeout=5).status_code
        except httpx.ConnectError:
            return
        assert status == 503
        threading.Event().wait(0.02)
    raise AssertionError("the server kept taking connections after SIGTERM")


@pytest.mark.slow
def test_sigterm_lets_a_running_request_finish_and_exits_0(tmp_path: Path) -> None:
    with _start(tmp_path) as (proc, out):
        base = re.search(r"on (http://\S+)", out[0])[1]  # type: ignore[index]
        token = next(line.strip() for line in out if line.strip().startswith("ast_"))
        team_id = _team_with_open_task(base, token)
        thread, result = _waiting(base, token, team_id, 3.0)
        _in_flight(base)
        proc.send_signal(signal.SIGTERM)
        _refuses_new_connections(base)
        thread.join(30)
        answer = result.get("response")
        assert answer is not None, result
        assert (answer.status_code, answer.json()) == (200, {"done": False})
        assert proc.wait(timeout=30) == 0


@pytest.mark.slow
def test_past_the_drain_bound_the_request_is_cut_and_the_exit_is_0(tmp_path: Path) -> None:
    with _start(tmp_path, "--drain-seconds", "0.5") as (proc, out):
        base = re.search(r"on (http://\S+)", out[0])[1]  # type: ignore[index]
        token = next(line.strip() for line in out if line.strip().startswith("ast_"))
        team_id = _team_with_open_task(base, token)
        thread, result = _waiting(base, token, team_id, 60.0)
        _in_flight(base)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        thread.join(30)
        assert "response" not in result or result["response"].status_code >= 500, result


def test_drain_seconds_out_of_range_is_refused(tmp_path: Path) -> None:
    from agentscope_teams.cli import main

    store = f"file://{tmp_path / 'store'}"
    assert main(["serve", "--store", store, "--drain-seconds", "-1"]) != 0
