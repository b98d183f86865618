"""What an A2A server tells its callers when things go wrong, against real server processes: a
store outage in the error's public form (the store's URL, host, port and database stay in the
server's log, as the MCP server and the control plane do), a body over the limit refused unread,
an agent's crash as a failed task."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .helpers import free_port, processes, write_tokens

pytest.importorskip("a2a")
TOKEN = "alice-a2a-token-0123456789"


def start_redis(port: int, folder: Path) -> subprocess.Popen[bytes]:
    """A redis-server on ``port`` keeping its data in ``folder`` (append-only file: a restart
    finds what was written before the stop)."""
    args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    proc = subprocess.Popen([*args, "--appendonly", "yes", "--dir", str(folder)])
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.terminate()
    raise RuntimeError(f"redis-server on port {port} did not start")


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = start_redis(port, tmp_path)
    try:
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


def test_a_crash_of_the_agent_is_a_failed_task_without_its_internals(tmp_path: Path) -> None:
    """An exception that is not a library error (a bug) fails the task with a message that says
    so, not a JSON-RPC error about a task group; the file it named stays in the server's log."""
    tokens = write_tokens(tmp_path / "tokens.json", {TOKEN: {"user": "alice", "org": "acme"}})
    argv = ["tests.a2a.agent_server", f"file://{tmp_path / 'store'}", str(tokens)]
    headers = {"Authorization": f"Bearer {TOKEN}", "A2A-Version": "1.0"}
    with processes(argv) as (port,), httpx.Client(timeout=60) as http:
        url = f"http://127.0.0.1:{port}/a2a/lead/"

        def send(text: str) -> dict[str, Any]:
            message = {"messageId": text, "role": "ROLE_USER", "parts": [{"text": text}]}
            params = {"message": message}
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
            answer: dict[str, Any] = http.post(url, json=body, headers=headers).json()
            return answer

        crashed, after = send("crash"), send("hello")
    assert "result" in crashed, crashed
    status = crashed["result"]["task"]["status"]
    said = json.dumps(status["message"])
    assert status["state"] == "TASK_STATE_FAILED" and "internal error" in said
    assert "OSError" in said and "/srv/agentscope" not in said and "provider.key" not in said
    assert after["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"  # goes on


def test_list_tasks_sees_every_task_of_the_caller_past_a_thousand(tmp_path: Path) -> None:
    """ListTasks is newest first over all the caller's tasks: the 1001st task record (by key
    order) was left out, so the newest task was missing and the total said 1000."""
    import anyio
    from a2a.server.context import ServerCallContext
    from a2a.types.a2a_pb2 import Task, TaskState, TaskStatus

    from agentscope_teams.a2a_server import StoreTaskStore
    from agentscope_teams.a2a_server.auth import Caller, CallerUser
    from agentscope_teams.store import store_from_url

    url = f"file://{tmp_path / 'store'}"
    alice = ServerCallContext(user=CallerUser(Caller("alice", "acme")))

    async def seed() -> None:
        async with store_from_url(url) as store:
            tasks = StoreTaskStore(store, "lead")
            for n in range(1001):  # t-1000, the newest, is the last key
                status = TaskStatus(state=TaskState.TASK_STATE_COMPLETED)
                status.timestamp.FromSeconds(1_700_000_000 + n)
                await tasks.save(Task(id=f"t-{n:04d}", context_id="c", status=status), alice)

    anyio.run(seed)
    tokens = write_tokens(tmp_path / "tokens.json", {TOKEN: {"user": "alice", "org": "acme"}})
    headers = {"Authorization": f"Bearer {TOKEN}", "A2A-Version": "1.0"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 2}}
    with processes(["tests.a2a.agent_server", url, str(tokens)]) as (port,):
        listed = httpx.post(f"http://127.0.0.1:{port}/a2a/lead/", json=body, headers=headers)
    result = listed.json()["result"]
    assert [t["id"] for t in result["tasks"]] == ["t-1000", "t-0999"]
    assert result["totalSize"] == 1001


def test_a_store_blip_while_the_agent_works_does_not_fail_the_task(
    private_redis: tuple[int, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    """The store goes away and comes back while the agent waits on a tool: the cancel watchers
    (which read the store meanwhile) ride it out, and the task completes once the tool returns."""
    redis_port, redis = private_redis
    tokens = write_tokens(tmp_path / "tokens.json", {TOKEN: {"user": "alice", "org": "acme"}})
    argv = ["tests.a2a.agent_server", f"redis://127.0.0.1:{redis_port}/0", str(tokens)]
    headers = {"Authorization": f"Bearer {TOKEN}", "A2A-Version": "1.0"}
    gate = tmp_path / "gate"
    with processes(argv) as (port,), httpx.Client(timeout=60) as http:
        url = f"http://127.0.0.1:{port}/a2a/lead/"

        def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            answer: dict[str, Any] = http.post(url, json=body, headers=headers).json()
            return answer

        text = f"wait for {gate}"
        message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}
        config = {"returnImmediately": True}
        started = rpc("SendMessage", {"message": message, "configuration": config})
        task_id = started["result"]["task"]["id"]
        waiting = tmp_path / "gate.waiting"
        for _ in range(600):  # the agent waits on its tool (a liveness guard, not a threshold)
            if waiting.exists():
                break
            time.sleep(0.1)
        assert waiting.exists(), "the agent never reached its tool"
        redis.terminate()
        redis.wait(20)
        time.sleep(3)  # the watchers read the store (every second) while it is gone
        restarted = start_redis(redis_port, tmp_path)
        try:
            gate.write_text("open")
            for _ in range(600):  # a liveness guard, not a timing threshold
                task = rpc("GetTask", {"id": task_id}).get("result", {})
                if task.get("status", {}).get("state") not in (
                    None,
                    "TASK_STATE_SUBMITTED",
                    "TASK_STATE_WORKING",
                ):
                    break
                time.sleep(0.1)
        finally:
            restarted.terminate()
            restarted.wait(20)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
