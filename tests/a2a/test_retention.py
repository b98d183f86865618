"""A2A task records do not outlive their retention: a task that has ended (completed, failed,
cancelled, rejected) is removed ``task_retention`` seconds later, with its push-notification
configs, in every store backend; a task still running, or paused for input, never is. Reading an
expired task is the protocol's "task not found", saying why."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio
import httpx
import pytest

pytest.importorskip("a2a")

from a2a.server.cluster import TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import (
    ListTasksRequest,
    Message,
    Part,
    Role,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
)
from google.protobuf.json_format import MessageToDict

from agentscope_teams import HarnessAgent
from agentscope_teams.a2a_server.auth import Caller, CallerUser, caller_of
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


def _paused(task_id: str) -> Task:
    """A task paused for input now (the status time the SDK's updater gives)."""
    task = _task(task_id, TaskState.TASK_STATE_INPUT_REQUIRED)
    task.status.timestamp.GetCurrentTime()
    task.status.message.CopyFrom(
        Message(message_id="q", role=Role.ROLE_AGENT, parts=[Part(text="Which one?")])
    )
    return task


async def test_a_task_left_waiting_for_input_is_cancelled_then_removed(
    store: BaseStore, ns: str
) -> None:
    """A caller that walks away from a task waiting for input: after the input time-out the task
    reads as cancelled (a terminal state, saying why; in a list too), then goes a retention
    later with its push configs; a task still working stays."""
    context = ServerCallContext(user=CallerUser(Caller("alice", ns)))
    frozen: list[float] = []  # the clock stands still for the control, then runs
    clock = lambda: frozen[0] if frozen else time.time()  # noqa: E731
    plain = StoreTaskStore(store, "lead", retention=RETENTION, input_timeout=0.5, clock=clock)
    pushes = StorePushConfigStore(store, "lead", plain)
    tasks = VersionedTasks(plain, pushes)
    missing = TaskVersion.MISSING
    hook = TaskPushNotificationConfig(id="h", task_id="asked", url="http://example.com/h")
    await pushes.set_info("asked", hook, context)
    working = _task("asked", TaskState.TASK_STATE_WORKING)
    first = await tasks.save(working, event=None, prev=None, prev_version=missing, context=context)
    paused = _paused("asked")
    frozen.append(paused.status.timestamp.ToNanoseconds() / 1e9)
    await tasks.save(paused, event=None, prev=working, prev_version=first, context=context)
    await tasks.save(
        _task("busy", TaskState.TASK_STATE_WORKING),
        event=None,
        prev=None,
        prev_version=missing,
        context=context,
    )
    stored = await tasks.get("asked", context)  # control: it waits at first
    assert stored is not None and stored.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    frozen.clear()

    async def cancelled() -> bool:
        found = await tasks.get("asked", context)
        return found is not None and found.task.status.state == TaskState.TASK_STATE_CANCELED

    await _until(cancelled, "the task waiting for input was never cancelled")
    ended = await plain.get("asked", context)
    assert ended is not None
    why = ended.status.message.parts[0].text
    assert "no input within 0.5 s" in why and "without taskId" in why, why
    assert [m.parts[0].text for m in ended.history][-1] == "Which one?"  # the question stays
    request = ListTasksRequest(status=TaskState.TASK_STATE_CANCELED)
    assert [t.id for t in (await plain.list(request, context)).tasks] == ["asked"]

    async def gone() -> bool:  # its push config goes with it (its TTL dates from the pause)
        found = await tasks.get("asked", context)
        return found is None and await pushes.get_info_for_dispatch("asked") == []

    await _until(gone, "the cancelled task or its push config was never removed")
    busy = await tasks.get("busy", context)
    assert busy is not None and busy.task.status.state == TaskState.TASK_STATE_WORKING


class _Interfering:
    """A store whose first write with a TTL of a push config is preceded by another writer's
    change of that config (a caller setting it again in the same instant)."""

    def __init__(self, inner: BaseStore, change: bytes) -> None:
        self.inner, self.change, self.done = inner, change, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def put(self, key: Any, value: bytes, **options: Any) -> int:
        if key[0] == "a2a-push" and options.get("ttl") is not None and not self.done:
            self.done = True
            await self.inner.put(key, self.change)
        return await self.inner.put(key, value, **options)


async def test_retaining_push_configs_never_loses_a_concurrent_change(
    store: BaseStore, ns: str
) -> None:
    context = ServerCallContext(user=CallerUser(Caller("alice", ns)))
    agent = f"lead-{ns}"
    pushes = StorePushConfigStore(store, agent)
    old = TaskPushNotificationConfig(id="h", task_id="t", url="http://example.com/old")
    await pushes.set_info("t", old, context)
    new = TaskPushNotificationConfig(id="h", task_id="t", url="http://example.com/new")
    owner = caller_of(context).owner
    record = {"schema_version": 2, "config": MessageToDict(new), "owner": owner}
    changed = _Interfering(store, json.dumps(record).encode())
    await StorePushConfigStore(cast(BaseStore, changed), agent).retain("t", RETENTION)
    assert changed.done  # the change happened between the retain's read and its write
    assert [c.url for c in await pushes.get_info("t", context)] == ["http://example.com/new"]

    async def gone() -> bool:
        return await pushes.get_info_for_dispatch("t") == []

    await _until(gone, "the changed config never got the ended task's TTL")


async def test_records_of_an_older_release_get_their_ttl_once(store: BaseStore, ns: str) -> None:
    """Tasks written before waiting tasks (or, before that, ended ones) had a TTL: an ended and
    a waiting one get what is left of theirs (push configs too), one ended longer ago than the
    retention goes at once, a working one is left alone; a second pass writes nothing."""
    from agentscope_teams.a2a_server.backfill import backfill_ttls
    from agentscope_teams.a2a_server.lifetimes import Lifetimes
    from agentscope_teams.keys import a2a_task_key

    context = ServerCallContext(user=CallerUser(Caller("alice", ns)))
    agent = f"lead-{ns}"
    plain = StoreTaskStore(store, agent, retention=RETENTION, input_timeout=0.5)
    pushes = StorePushConfigStore(store, agent)

    async def legacy(task: Task) -> None:  # schema 1, no TTL
        record = {"schema_version": 1, "task": MessageToDict(task)}
        await store.put(a2a_task_key(ns, "alice", agent, task.id), json.dumps(record).encode())
        hook = TaskPushNotificationConfig(id="h", task_id=task.id, url="http://example.com/h")
        await pushes.set_info(task.id, hook, context)

    done = _task("done", TaskState.TASK_STATE_COMPLETED)
    done.status.timestamp.GetCurrentTime()
    long_ago = _task("long-ago", TaskState.TASK_STATE_FAILED)
    long_ago.status.timestamp.FromSeconds(int(time.time()) - 3 * 24 * 3600)
    for task in (done, long_ago, _paused("asked"), _task("busy", TaskState.TASK_STATE_WORKING)):
        await legacy(task)

    assert await backfill_ttls(store, Lifetimes(RETENTION, 0.5)) >= 3
    assert await plain.get("long-ago", context) is None
    assert await pushes.get_info_for_dispatch("long-ago") == []
    versions = [await store.get(a2a_task_key(ns, "alice", agent, t)) for t in ("done", "busy")]
    await backfill_ttls(store, Lifetimes(RETENTION, 0.5))  # once: nothing is written again
    again = [await store.get(a2a_task_key(ns, "alice", agent, t)) for t in ("done", "busy")]
    assert [e.version for e in again if e] == [e.version for e in versions if e] != []

    async def gone() -> bool:
        found = [await plain.get(t, context) for t in ("done", "asked")]
        configs = [await pushes.get_info_for_dispatch(t) for t in ("done", "asked")]
        return found == [None, None] and configs == [[], []]

    await _until(gone, "the older release's ended and waiting tasks were never removed")
    busy = await plain.get("busy", context)
    assert busy is not None and busy.status.state == TaskState.TASK_STATE_WORKING
    assert [c.id for c in await pushes.get_info("busy", context)] == ["h"]


async def test_an_answer_after_the_input_timeout_is_refused() -> None:
    """Over the protocol: a task paused on ``ask_user_question`` reads ``canceled`` once the
    input time-out has passed, and an answer sent to it then is refused as to any ended task."""
    from agentscope_teams.a2a_server import ExposedAgent, a2a_app

    from .agent_server import answer

    store = InMemoryStore()
    agent = HarnessAgent("lead", ScriptedModel(answer), "lead", store=store)
    app = a2a_app([ExposedAgent(agent)], store, verifier=None, anonymous=True, input_timeout=0.5)
    headers = {"A2A-Version": "1.0"}
    transport = httpx.ASGITransport(app=app)
    async with agent, httpx.AsyncClient(transport=transport, base_url="http://t") as http:

        async def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            reply: dict[str, Any] = (await http.post("/lead/", json=body, headers=headers)).json()
            return reply

        ask = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "ask me"}]}
        task = (await rpc("SendMessage", {"message": ask}))["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task["status"]

        async def cancelled() -> bool:
            got = await rpc("GetTask", {"id": task["id"]})
            return bool(got["result"]["status"]["state"] == "TASK_STATE_CANCELED")

        await _until(cancelled, "the paused task was never cancelled")
        late = {
            "messageId": "m2",
            "role": "ROLE_USER",
            "parts": [{"text": "red"}],
            "taskId": task["id"],
            "contextId": task["contextId"],
        }
        refused = await rpc("SendMessage", {"message": late})
        assert "has ended (canceled)" in refused["error"]["message"], refused
        await app.aclose()
