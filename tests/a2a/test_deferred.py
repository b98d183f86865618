"""A reply a PreToolUse hook deferred, over A2A: the task waits in ``input-required`` naming the
call and the hook's reason (it does not complete with the stop notice as its answer); the next
message on the task, through either of two server processes over one Redis store, runs the hook
again, and the call runs once it allows. A real command hook decides, a scripted model calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from a2a.helpers.proto_helpers import get_data_parts
from a2a.types.a2a_pb2 import GetTaskRequest, Task, TaskState

from agentscope_teams.store.memory import InMemoryStore

from ..backends import SERVICE_URLS, unique_namespace
from ..conftest import require_service
from .helpers import answer_of, processes, sdk_client, send, status_text, user_message, write_tokens

pytest.importorskip("a2a")
ALICE = "alice-defer-token-0123456789"


@pytest.fixture(scope="module")
def deferring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[str]]]:
    """Two server processes over one Redis store, and the folder of their hook (whose
    ``decision`` file the tests write)."""
    require_service("redis")
    folder = tmp_path_factory.mktemp("a2a-defer")
    tokens = write_tokens(
        folder / "tokens.json", {ALICE: {"user": "alice", "org": unique_namespace()}}
    )
    argv = ["tests.a2a.defer_server", SERVICE_URLS["redis"], str(tokens), str(folder)]
    with processes(argv, argv) as ports:
        yield folder, [f"http://127.0.0.1:{port}/a2a/lead/" for port in ports]


def _decide(folder: Path, decision: str) -> None:
    (folder / "decision").write_text(decision)


def _pause(task: Task) -> dict[str, Any]:
    [data] = [d for d in get_data_parts(list(task.status.message.parts)) if d]
    pause: dict[str, Any] = data["agentscope_teams"]
    return pause


def _hook_saw(folder: Path) -> list[str]:
    lines = (folder / "seen.jsonl").read_text().splitlines()
    return [json.loads(line)["id"] for line in lines if json.loads(line)["tool"] == "Write"]


def test_a_deferred_call_waits_for_input_and_an_empty_message_resumes_it(
    deferring: tuple[Path, list[str]],
) -> None:
    folder, (first_url, second_url) = deferring
    _decide(folder, "defer")

    async def exchange() -> None:
        first = await sdk_client(first_url, ALICE)
        second = await sdk_client(second_url, ALICE)
        stopped = await send(first, user_message("write hello"))
        assert stopped.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        text = status_text(stopped)
        assert 'write_file {"path": "a.txt", "content": "hello"}' in text
        assert "policy: defer" in text and "did not run" in text
        pause = _pause(stopped)
        assert pause["status"] == "tool_deferred"
        assert pause["session_id"] == stopped.context_id
        [call] = pause["tool_calls"]
        assert call["name"] == "write_file" and call["reason"] == "policy: defer"
        assert not (folder / "ws" / "a.txt").exists()  # not run
        assert answer_of(stopped) == ""  # no answer: the stop notice is not one

        _decide(folder, "allow")
        resumed = await send(second, user_message("", task=stopped.id, context=stopped.context_id))
        assert resumed.id == stopped.id
        assert resumed.status.state == TaskState.TASK_STATE_COMPLETED
        assert answer_of(resumed).startswith("wrote: ") and "a.txt" in answer_of(resumed)
        assert (folder / "ws" / "a.txt").read_text() == "hello"
        assert _hook_saw(folder)[-2:] == [call["id"], call["id"]]  # asked again on resume
        seen = await first.get_task(GetTaskRequest(id=stopped.id))
        assert seen.status.state == TaskState.TASK_STATE_COMPLETED

    anyio.run(exchange)


def test_text_sent_to_a_deferred_task_comes_after_the_calls_result(
    deferring: tuple[Path, list[str]],
) -> None:
    """Deferred again, the text is not added (the status says so); once the hook allows, the
    call runs and the new text is the model's next message."""
    folder, (first_url, second_url) = deferring
    _decide(folder, "defer")

    async def exchange() -> None:
        first = await sdk_client(first_url, ALICE)
        second = await sdk_client(second_url, ALICE)
        stopped = await send(first, user_message("write again"))
        task, context = stopped.id, stopped.context_id
        still = await send(second, user_message("and this", task=task, context=context))
        assert still.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert _pause(still)["input_not_added"] is True
        assert "was not added" in status_text(still)
        assert (folder / "ws" / "a.txt").read_text() != "again"

        _decide(folder, "allow")
        done = await send(first, user_message("thanks", task=task, context=context))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert answer_of(done) == "echo: thanks"
        assert (folder / "ws" / "a.txt").read_text() == "again"

    anyio.run(exchange)


async def test_a_deferred_task_is_cancelled_after_the_input_timeout(tmp_path: Path) -> None:
    """``input_timeout`` applies to a deferred task as to any task waiting for input."""
    from agentscope_teams.a2a_server import ExposedAgent, a2a_app

    from .defer_server import lead
    from .test_retention import _until

    _decide(tmp_path, "defer")
    store = InMemoryStore()
    agent = lead(tmp_path, store)
    app = a2a_app([ExposedAgent(agent)], store, verifier=None, anonymous=True, input_timeout=0.5)
    transport = httpx.ASGITransport(app=app)
    async with agent, httpx.AsyncClient(transport=transport, base_url="http://t") as http:

        async def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            headers = {"A2A-Version": "1.0"}
            reply: dict[str, Any] = (await http.post("/lead/", json=body, headers=headers)).json()
            return reply

        write = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "write late"}]}
        task = (await rpc("SendMessage", {"message": write}))["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task["status"]

        async def cancelled() -> bool:
            got = await rpc("GetTask", {"id": task["id"]})
            return bool(got["result"]["status"]["state"] == "TASK_STATE_CANCELED")

        await _until(cancelled, "the deferred task was never cancelled")
        await app.aclose()
    assert not (tmp_path / "ws" / "a.txt").exists()
