"""The A2A server's cluster-mode stores over our store: task records saved compare-and-swap on the
store's entry version (a cancel overwrites any task that has not ended), and each task's events in
a store stream that any process tails from a version on."""

from __future__ import annotations

import asyncio
import json

import anyio
import pytest

pytest.importorskip("a2a")

from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion, VersionedEvent
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import Task, TaskState, TaskStatus, TaskStatusUpdateEvent

from agentscope_teams.a2a_server.auth import Caller, CallerUser
from agentscope_teams.a2a_server.cluster import StoreTaskEventStream, VersionedTasks
from agentscope_teams.a2a_server.stores import StoreTaskStore
from agentscope_teams.keys import a2a_events_key
from agentscope_teams.store.memory import InMemoryStore

ALICE = ServerCallContext(user=CallerUser(Caller("alice", "acme")))
BOB = ServerCallContext(user=CallerUser(Caller("bob", "acme")))


def _task(state: TaskState) -> Task:
    return Task(id="t-1", context_id="c-1", status=TaskStatus(state=state))


def _update(state: TaskState) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id="t-1", context_id="c-1", status=TaskStatus(state=state))


def test_a_stale_save_is_refused_and_a_cancel_overwrites_a_running_task() -> None:
    async def scenario() -> None:
        tasks = VersionedTasks(StoreTaskStore(InMemoryStore(), "lead"))
        working = _task(TaskState.TASK_STATE_WORKING)
        first = await tasks.save(
            working, event=None, prev=None, prev_version=TaskVersion.MISSING, context=ALICE
        )
        second = await tasks.save(
            working, event=None, prev=working, prev_version=first, context=ALICE
        )
        assert second.is_after(first)
        for stale in (first, TaskVersion.MISSING):  # another process wrote it since
            with pytest.raises(ConcurrentTaskModificationError):
                await tasks.save(working, event=None, prev=None, prev_version=stale, context=ALICE)
        cancelled = _task(TaskState.TASK_STATE_CANCELED)
        third = await tasks.save(
            cancelled, event=None, prev=None, prev_version=first, context=ALICE
        )
        stored = await tasks.get("t-1", ALICE)
        assert stored is not None and stored.version == third and third.is_after(second)
        assert stored.task.status.state == TaskState.TASK_STATE_CANCELED
        with pytest.raises(ConcurrentTaskModificationError):  # an ended task stays ended
            await tasks.save(cancelled, event=None, prev=None, prev_version=third, context=ALICE)
        assert await tasks.get("t-1", BOB) is None  # another caller's task is not found

    anyio.run(scenario)


def test_a_subscriber_gets_the_events_after_its_version_then_the_live_ones() -> None:
    async def scenario() -> list[tuple[int, int]]:
        store = InMemoryStore()
        writer, reader = StoreTaskEventStream(store, "lead"), StoreTaskEventStream(store, "lead")
        for number in (1, 2, 3):
            event = VersionedEvent(_update(TaskState.TASK_STATE_WORKING), TaskVersion(number))
            await writer.publish("t-1", event)
        seen: list[tuple[int, int]] = []
        with anyio.fail_after(30):  # a liveness guard, not a timing threshold
            async for got in reader.subscribe("t-1", after=TaskVersion(1)):
                seen.append((got.version._value, got.event.status.state))  # type: ignore[union-attr]
                if len(seen) == 2:  # the stored ones are read: one published after they were
                    ended = _update(TaskState.TASK_STATE_COMPLETED)
                    await writer.publish("t-1", VersionedEvent(ended, TaskVersion(4)))
                if len(seen) == 3:
                    break
        return seen

    seen = anyio.run(scenario)
    working, done = TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED
    assert seen == [(2, working), (3, working), (4, done)]


def _pending() -> set[asyncio.Task[object]]:
    current = asyncio.current_task()
    return {t for t in asyncio.all_tasks() if t is not current and not t.done()}


def test_closing_the_stream_deletes_ended_tasks_streams_and_leaves_no_task() -> None:
    """An ended task's stream waits KEEP_SECONDS to be deleted; closing the server's stream ends
    that wait: the streams are deleted now and no task is left pending."""

    async def scenario() -> None:
        store = InMemoryStore()
        events = StoreTaskEventStream(store, "lead")
        before = _pending()
        for task_id in ("t-1", "t-2"):
            ended = VersionedEvent(_update(TaskState.TASK_STATE_COMPLETED), TaskVersion(1))
            await events.publish(task_id, ended)
            await events.publish(task_id, ended)  # a second end: still one deletion
        waiting = _pending() - before
        assert len(waiting) == 2  # the control: the deletions wait in tasks of their own
        await events.aclose()
        assert _pending() - before == set()
        for task_id in ("t-1", "t-2"):
            assert await store.read(a2a_events_key("lead", task_id), after=0, limit=10) == []
        ended = VersionedEvent(_update(TaskState.TASK_STATE_FAILED), TaskVersion(1))
        await events.publish("t-3", ended)  # after the close: deleted at once, no new task
        assert _pending() - before == set()
        assert await store.read(a2a_events_key("lead", "t-3"), after=0, limit=10) == []

    asyncio.run(scenario())


def test_the_apps_shutdown_closes_its_streams() -> None:
    """Served alone, the A2A app's lifespan shutdown ends the deletions its streams own and
    closes its push-notification clients."""
    from agentscope_teams import HarnessAgent, ScriptedModel
    from agentscope_teams.a2a_server import ExposedAgent, a2a_app

    async def scenario() -> None:
        store = InMemoryStore()
        agent = HarnessAgent("lead", ScriptedModel(["hi"]), store=store)
        app = a2a_app([ExposedAgent(agent)], store, verifier=None, anonymous=True)
        before = _pending()
        ended = VersionedEvent(_update(TaskState.TASK_STATE_COMPLETED), TaskVersion(1))
        await app.streams[0].publish("t-1", ended)
        assert len(_pending() - before) == 1
        await _lifespan(app)
        assert _pending() - before == set()
        assert all(client.is_closed for client in app.clients)  # the push senders' clients
        assert await store.read(a2a_events_key("lead", "t-1"), after=0, limit=10) == []

    asyncio.run(scenario())


async def _lifespan(app: object) -> None:
    """Start and stop ``app`` as an ASGI server does (the lifespan protocol)."""
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[str] = []

    async def receive() -> dict[str, str]:
        return incoming.pop(0)

    async def send(message: dict[str, str]) -> None:
        sent.append(message["type"])

    await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)  # type: ignore[operator]
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def test_a_store_failure_fails_the_task_without_the_store_location() -> None:
    """The failed task's message, which the caller reads, is the store error's public form."""
    import httpx

    from agentscope_teams import HarnessAgent, ScriptedModel
    from agentscope_teams.a2a_server import ExposedAgent, a2a_app
    from agentscope_teams.errors import StoreUnavailableError
    from agentscope_teams.keys import SESSION, family_of
    from agentscope_teams.store.base import Entry, Key

    class SessionsUnreachable(InMemoryStore):
        async def get(self, key: Key) -> Entry | None:
            if family_of(key) is SESSION:
                raise StoreUnavailableError(
                    "cannot reach postgresql://teams@10.1.2.3:5432/tenants_db: refused",
                    public="the PostgreSQL store cannot be reached; the server's log names why",
                )
            return await super().get(key)

    async def scenario() -> dict[str, object]:
        store = SessionsUnreachable()
        agent = HarnessAgent("lead", ScriptedModel(["hi"]), store=store)
        app = a2a_app([ExposedAgent(agent)], store, verifier=None, anonymous=True)
        message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        transport = httpx.ASGITransport(app=app)
        async with agent, httpx.AsyncClient(transport=transport, base_url="http://a2a") as http:
            answer = (await http.post("/lead/", json=body, headers={"A2A-Version": "1.0"})).json()
        await app.aclose()
        return answer

    answer = anyio.run(scenario)
    task = answer["result"]["task"]
    text = json.dumps(task["status"])
    assert task["status"]["state"] == "TASK_STATE_FAILED" and "cannot be reached" in text
    assert "10.1.2.3" not in text and "tenants_db" not in text and "teams@" not in text


@pytest.mark.parametrize("token", ["²", "9" * 5000, "-1", "next"])
def test_a_page_token_this_server_never_gave_is_an_invalid_param(token: str) -> None:
    """Not an internal error (nor a silent first page): the caller is told which field is bad."""
    from a2a.types.a2a_pb2 import ListTasksRequest
    from a2a.utils.errors import InvalidParamsError

    tasks = StoreTaskStore(InMemoryStore(), "lead")
    with pytest.raises(InvalidParamsError, match="pageToken"):
        anyio.run(tasks.list, ListTasksRequest(page_token=token), ALICE)
    assert anyio.run(tasks.list, ListTasksRequest(page_token=""), ALICE).total_size == 0
