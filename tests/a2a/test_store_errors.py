"""An A2A server whose store goes away answers its callers with the error's public form: the
store's URL, host, port and database stay in the server's log (as the MCP server and the control
plane do). A real server process over a private redis-server that the test stops."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .helpers import free_port, processes, write_tokens

pytest.importorskip("a2a")
TOKEN = "alice-a2a-token-0123456789"


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    proc = subprocess.Popen([*args, "--appendonly", "no", "--dir", str(tmp_path)])
    try:
        for _ in range(400):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield port, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(20)


def test_a_store_outage_is_answered_without_the_store_location(
    private_redis: tuple[int, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    redis_port, redis = private_redis
    tokens = write_tokens(tmp_path / "tokens.json", {TOKEN: {"user": "alice", "org": "acme"}})
    argv = ["tests.a2a.agent_server", f"redis://127.0.0.1:{redis_port}/7", str(tokens)]
    headers = {"Authorization": f"Bearer {TOKEN}", "A2A-Version": "1.0"}
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    calls = [
        ("GetTask", {"id": "t-1"}),
        ("ListTasks", {}),
        ("SendMessage", {"message": message}),
    ]
    with processes(argv) as (port,), httpx.Client(timeout=60) as http:
        url = f"http://127.0.0.1:{port}/a2a/lead/"

        def rpc(method: str, params: dict[str, object]) -> dict[str, object]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            answer: dict[str, object] = http.post(url, json=body, headers=headers).json()
            return answer

        assert "result" in rpc("ListTasks", {})  # control: the store answers
        redis.terminate()
        redis.wait(20)
        for method, params in calls:
            error = rpc(method, params)["error"]
            assert isinstance(error, dict), (method, error)
            text = str(error["message"])
            assert "cannot be reached" in text, (method, text)  # says what happened
            assert str(redis_port) not in text and "127.0.0.1" not in text, (method, text)
            assert "redis://" not in text, (method, text)


def test_a_request_body_over_the_limit_is_refused_unread(tmp_path: Path) -> None:
    """The a2a-sdk reads and parses any body whole: the app caps it (as the MCP SDK does)."""
    from agentscope_teams.a2a_server.app import MAX_BODY_BYTES

    tokens = write_tokens(tmp_path / "tokens.json", {TOKEN: {"user": "alice", "org": "acme"}})
    argv = ["tests.a2a.agent_server", f"file://{tmp_path / 'store'}", str(tokens)]
    headers = {"Authorization": f"Bearer {TOKEN}", "A2A-Version": "1.0"}

    def send(text: str) -> httpx.Response:
        message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        return http.post(url, json=body, headers=headers)

    with processes(argv) as (port,), httpx.Client(timeout=120) as http:
        url = f"http://127.0.0.1:{port}/a2a/lead/"
        big = send("x" * (MAX_BODY_BYTES + 1))
        assert big.status_code == 413 or "too large" in big.json()["error"]["message"].lower()
        small = send("hi")  # control: a message under the limit runs
        assert small.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
