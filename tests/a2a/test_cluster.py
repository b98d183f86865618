"""The A2A server's cluster-mode stores over our store: task records saved compare-and-swap on the
store's entry version (a cancel overwrites any task that has not ended), and each task's events in
a store stream that any process tails from a version on."""

from __future__ import annotations

import anyio
import pytest

pytest.importorskip("a2a")

from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion, VersionedEvent
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import Task, TaskState, TaskStatus, TaskStatusUpdateEvent

from agentscope_teams.a2a_server.auth import Caller, CallerUser
from agentscope_teams.a2a_server.cluster import StoreTaskEventStream, VersionedTasks
from agentscope_teams.a2a_server.stores import StoreTaskStore
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
