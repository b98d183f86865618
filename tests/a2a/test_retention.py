"""A2A task records do not outlive their retention: a task that has ended (completed, failed,
cancelled, rejected) is removed ``task_retention`` seconds later, with its push-notification
configs, in every store backend; a task still running, or paused for input, never is. Reading an
expired task is the protocol's "task not found", saying why."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import anyio
import httpx
import pytest

pytest.importorskip("a2a")

from a2a.server.cluster import TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import Task, TaskPushNotificationConfig, TaskState, TaskStatus

from agentscope_teams import HarnessAgent
from agentscope_teams.a2a_server.auth import Caller, CallerUser
from agentscope_teams.a2a_server.cluster import VersionedTasks
from agentscope_teams.a2a_server.stores import StorePushConfigStore, StoreTaskStore
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store.base import BaseStore
from agentscope_teams.store.memory import InMemoryStore

RETENTION = 1.0


def _task(task_id: str, state: TaskState) -> Task:
    return Task(id=task_id, context_id="c-1", status=TaskStatus(state=state))


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``check`` until it holds (a liveness guard of 30 s, not a timing threshold)."""
    deadline = time.monotonic() + 30
    while not await check():
        assert time.monotonic() < deadline, what
        await anyio.sleep(0.1)


async def test_an_ended_task_expires_and_a_running_one_stays(store: BaseStore, ns: str) -> None:
    context = ServerCallContext(user=CallerUser(Caller("alice", ns)))
    plain = StoreTaskStore(store, "lead", retention=RETENTION)
    pushes = StorePushConfigStore(store, "lead")
    tasks = VersionedTasks(plain, pushes)
    missing = TaskVersion.MISSING
    for task_id in ("working", "paused", "done", "cancelled"):
        hook = TaskPushNotificationConfig(id="h", task_id=task_id, url="http://example.com/h")
        await pushes.set_info(task_id, hook, context)
    running = {
        "working": TaskState.TASK_STATE_WORKING,
        "paused": TaskState.TASK_STATE_INPUT_REQUIRED,
    }
    for task_id, state in running.items():
        await tasks.save(
            _task(task_id, state), event=None, prev=None, prev_version=missing, context=context
        )
    first = await tasks.save(
        _task("done", TaskState.TASK_STATE_WORKING),
        event=None,
        prev=None,
        prev_version=missing,
        context=context,
    )
    await tasks.save(
        _task("done", TaskState.TASK_STATE_COMPLETED),
        event=None,
        prev=None,
        prev_version=first,
        context=context,
    )
    await tasks.save(  # the cancel path: written over whatever version is stored
        _task("working-then-cancelled", TaskState.TASK_STATE_WORKING),
        event=None,
        prev=None,
        prev_version=missing,
        context=context,
    )
    await tasks.save(
        _task("working-then-cancelled", TaskState.TASK_STATE_CANCELED),
        event=None,
        prev=None,
        prev_version=missing,
        context=context,
    )
    await plain.save(_task("failed", TaskState.TASK_STATE_FAILED), context)  # the plain store too

    async def ended_gone() -> bool:
        found = [await tasks.get(t, context) for t in ("done", "working-then-cancelled", "failed")]
        return found == [None, None, None]

    await _until(ended_gone, "the ended tasks were never removed")
    assert await pushes.get_info_for_dispatch("done") == []  # its push config went with it
    # the retention has passed: the running and the paused task are still there, configs too
    for task_id in running:
        stored = await tasks.get(task_id, context)
        assert stored is not None and stored.task.status.state == running[task_id]
        assert [c.id for c in await pushes.get_info(task_id, context)] == ["h"]


def test_a_retention_that_is_not_positive_is_refused() -> None:
    from agentscope_teams.a2a_server import ExposedAgent, a2a_app

    exposed = [ExposedAgent(HarnessAgent("lead", ScriptedModel(["hi"]), "lead"))]
    for bad in (0, -5.0, float("nan")):
        with pytest.raises(ConfigurationError, match="task_retention"):
            a2a_app(exposed, InMemoryStore(), verifier=None, anonymous=True, task_retention=bad)


async def test_get_of_an_expired_task_is_task_not_found_saying_why() -> None:
    from agentscope_teams.a2a_server import ExposedAgent, a2a_app

    store = InMemoryStore()
    agent = HarnessAgent("lead", ScriptedModel(lambda r: "done"), "lead", store=store)
    app = a2a_app([ExposedAgent(agent)], store, verifier=None, anonymous=True, task_retention=0.5)
    headers = {"A2A-Version": "1.0"}
    transport = httpx.ASGITransport(app=app)
    async with agent, httpx.AsyncClient(transport=transport, base_url="http://t") as http:

        async def rpc(method: str, params: dict[str, object]) -> dict[str, object]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            answer: dict[str, object] = (
                await http.post("/lead/", json=body, headers=headers)
            ).json()
            return answer

        message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        sent = await rpc("SendMessage", {"message": message})
        task = sent["result"]["task"]  # type: ignore[index]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        got = await rpc("GetTask", {"id": task["id"]})
        assert got["result"]["id"] == task["id"]  # type: ignore[index]  # control: still there

        async def expired() -> bool:
            return "error" in await rpc("GetTask", {"id": task["id"]})

        await _until(expired, "the completed task never expired")
        error = (await rpc("GetTask", {"id": task["id"]}))["error"]
        assert error["code"] == -32001, error  # type: ignore[index]  # TaskNotFoundError
        text = error["message"]  # type: ignore[index]
        assert task["id"] in text and "0.5 s" in text, text  # which task, and the retention
        await app.aclose()
