"""Push wake-ups: a member runtime with a long poll still starts on a task another client assigned,
because the client signals the team's channel (memory, Redis, PostgreSQL); without signals the poll
works."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.keys import TeamKeys
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.store.base import Key, signals_of
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.teams import (
    LocalTeamClient,
    TeamRuntime,
    member_session_id,
)

from ..backends import REDIS_URL, service_reachable, unique_namespace
from .helpers import member_runtime
from .scripts import member_script

pytestmark = pytest.mark.anyio


def _runtime(
    store: BaseStore, tmp_path: Path, poll: float, ctx: RuntimeContext, team_id: str
) -> tuple[TeamRuntime, ScriptedModel]:
    """A runtime serving ``team_id`` (watched) whose member answers with ``member_script``."""
    model = ScriptedModel(member_script)
    return member_runtime(store, tmp_path, ctx, team_id, model, poll), model


async def _team(client: LocalTeamClient) -> str:
    team = await client.create_team("wake")
    await client.spawn_member(team.id, "reviewer", "reviewer", member_session_id(team.id, "w"))
    return team.id


async def _until(check: Callable[[], object]) -> None:
    with anyio.fail_after(10):  # a guard, not a latency assertion
        while not check():  # noqa: ASYNC110 - polls a plain attribute
            await anyio.sleep(0.01)


async def test_a_signal_wakes_a_member_runtime_with_a_long_poll(
    two_stores: tuple[BaseStore, BaseStore], tmp_path: Path
) -> None:
    mine, theirs = two_stores
    ctx = RuntimeContext(session_id="s", user_id="alice", org_id=unique_namespace())
    other = LocalTeamClient(theirs, ctx)  # another client (another connection on Redis)
    team_id = await _team(other)
    runtime, model = _runtime(mine, tmp_path, 30.0, ctx, team_id)
    channel = TeamKeys(ctx.owner_scope(), team_id).signal()
    try:
        await _until(lambda: runtime.steps >= 1 and channel in runtime.listening)
        await anyio.sleep(0.1)  # the listener is inside wait_signal (subscribed on Redis)
        steps = runtime.steps
        await other.assign_task(team_id, "review", assignee="reviewer")
        await _until(lambda: model.requests)
        assert runtime.steps > steps  # woken well before the 30 s poll
    finally:
        await runtime.aclose()


async def test_without_signals_the_poll_still_finds_work(tmp_path: Path) -> None:
    store = InMemoryStore()
    store.signals_enabled = False
    assert signals_of(store) is None
    ctx = RuntimeContext(session_id="s", user_id="alice", org_id=unique_namespace())
    client = LocalTeamClient(store, ctx)
    team_id = await _team(client)
    runtime, model = _runtime(store, tmp_path, 0.05, ctx, team_id)
    try:
        await _until(lambda: runtime.steps >= 1)
        await client.assign_task(team_id, "review", assignee="reviewer")
        await _until(lambda: model.requests)
        assert runtime.listening == frozenset()
    finally:
        await runtime.aclose()


class BrokenSignals(InMemoryStore):
    async def wait_signal(self, channels: Sequence[Key], timeout: float) -> bool:  # noqa: ASYNC109
        raise RuntimeError("subscriber down")


async def test_a_failing_signal_wait_falls_back_to_polling(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = BrokenSignals()
    ctx = RuntimeContext(session_id="s", user_id="alice", org_id=unique_namespace())
    client = LocalTeamClient(store, ctx)
    team_id = await _team(client)
    with caplog.at_level(logging.WARNING):
        runtime, model = _runtime(store, tmp_path, 0.05, ctx, team_id)
        try:
            await _until(lambda: runtime.steps >= 1)
            await client.assign_task(team_id, "review", assignee="reviewer")
            await _until(lambda: model.requests)
        finally:
            await runtime.aclose()
    assert "polling instead" in caplog.text


async def test_a_dropped_redis_subscriber_reconnects() -> None:
    if not service_reachable(REDIS_URL):
        pytest.skip("Redis is not reachable")
    async with store_from_url(REDIS_URL) as store:
        signals = signals_of(store)
        assert signals is not None
        channel = TeamKeys(("o:" + unique_namespace(), "u:x"), "team-1").signal()
        assert not await signals.wait_signal([channel], 0.05)  # subscribes, starts the reader
        pubsub = store._subscriber._pubsub  # type: ignore[attr-defined]
        await pubsub.connection.disconnect()  # the reader fails, logs, wakes its waiters
        woke = False
        with anyio.fail_after(10):
            while not woke:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(signals.signal, channel)
                    woke = await signals.wait_signal([channel], 0.2)


async def test_a_wake_up_reads_the_inbox_once_before_the_model_is_asked(tmp_path: Path) -> None:
    """The runtime's read of the member's unread messages serves the call's first step too."""
    store = InMemoryStore()
    ctx = RuntimeContext(session_id="lead", user_id="wake-count")
    lead = LocalTeamClient(store, ctx)
    team_id = await _team(lead)
    calls: list[tuple[str, str]] = []
    asked = anyio.Event()

    def member(_: object) -> str:
        asked.set()
        return "done"

    def counting(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            if not asked.is_set():
                calls.append((name, str(args[0]) if args else ""))
            return await method(*args, **kwargs)

        return counted

    for name in ("get", "get_many", "put", "read", "list_keys", "delete", "append"):
        setattr(store, name, counting(name, getattr(store, name)))
    runtime = member_runtime(store, tmp_path, ctx, team_id, ScriptedModel(member))
    store.signals_enabled = False  # the test wakes the runtime itself, once the work is there
    async with anyio.create_task_group() as tg:
        tg.start_soon(runtime.serve_forever)
        await anyio.sleep(0.1)  # the runtime's first (empty) step
        await lead.send_message(team_id, "lead", "reviewer", "please look at a.py")
        await lead.assign_task(team_id, "review a.py", assignee="reviewer")
        calls.clear()
        runtime.nudge()
        with anyio.fail_after(10):
            await asked.wait()
        tg.cancel_scope.cancel()
    inbox_reads = [key for name, key in calls if name == "read" and "'inbox'" in key]
    assert len(inbox_reads) == 1, calls  # two (with a cursor read) when the call read it again
    # one read of the cursor: the step's read of every member's cursor at once (a get_many)
    cursor_reads = [k for n, k in calls if n in ("get", "get_many") and "'cursor'" in k]
    assert len(cursor_reads) == 1, calls
