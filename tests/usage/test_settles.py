"""The settle of a governed call (``FINISH``) runs beside the caller's next work, and is never lost:
a call returns with its usage counted, its settle overlapped its last session save, a later call of
the same reply waits for it rather than count its reservation as somebody else's, a failure is
logged and counted, and closing the agent, the governor or only the store (or the process ending
right after a call) leaves no reservation uncounted; a store's close waits for its settles for a
bounded time and logs those left."""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams import Budget, HarnessAgent, RuntimeContext
from agentscope_teams.agent.config import ReActConfig
from agentscope_teams.agent.react import ReActAgent
from agentscope_teams.agent.writer import SessionWriter
from agentscope_teams.model.base import Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.state import AgentState
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.usage import UsageGovernor, add_budget
from agentscope_teams.usage.backend import usage_backend

from ..backends import StoreSpec, unique_namespace

USED = Usage(input_tokens=30, output_tokens=10)
Finish = Callable[..., Awaitable[None]]


def _model(steps: int = 1) -> ScriptedModel:
    """A model that calls a tool ``steps - 1`` times (an unknown one: an error result), then
    answers; each call reports 40 tokens."""
    calls = [ScriptedModel.tool_call("nothing", {}, usage=USED) for _ in range(steps - 1)]
    return ScriptedModel([*calls, ScriptedModel.text("ok", usage=USED)])


def _slowed(store: BaseStore, before: Callable[[], Awaitable[None]]) -> dict[str, int]:
    """Make every settle on ``store`` run ``before()`` first; counts the settles that began.
    Every settle is a task of its own here: on Redis a last ``FINISH`` does not ride the last save
    (that is ``test_riders``'), so these tests see the settle tasks of every store alike."""
    backend: Any = usage_backend(store)
    backend.rides = None
    original: Finish = backend.finish
    seen = {"began": 0}

    async def finish(*args: Any) -> None:
        seen["began"] += 1
        await before()
        await original(*args)

    backend.finish = finish
    return seen


async def _used(store: BaseStore, name: str) -> tuple[int, int]:
    """(settled tokens, reserved tokens) of budget ``name``."""
    doc = await usage_backend(store).read(name)
    assert doc is not None, name
    return doc["ut"], doc["rt"]


def _agent(store: BaseStore | str, tmp_path: Path, steps: int = 1) -> HarnessAgent:
    return HarnessAgent(
        "a", _model(steps), store=store, workspace=tmp_path, budget=Budget(max_tokens=10**6),
        builtin_tools=False, config=ReActConfig(stream_model=False),
    )  # fmt: skip


def _ctx() -> RuntimeContext:
    return RuntimeContext(session_id="s1", user_id="u", org_id=unique_namespace())


def _session_budget(ctx: RuntimeContext) -> str:
    return f"session:{ctx.org_id}/{ctx.user_id}/{ctx.session_id}"


@pytest.mark.anyio
@pytest.mark.parametrize("store_spec", ["file", "redis"], indirect=True)
async def test_a_call_returns_with_its_usage_counted_its_settle_beside_the_last_save(
    store: BaseStore, store_spec: StoreSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = anyio.Event()
    original = SessionWriter.save

    async def save(self: SessionWriter, state: AgentState, *, release: bool = False) -> int:
        saved.set()
        return await original(self, state, release=release)

    monkeypatch.setattr(SessionWriter, "save", save)
    beside: list[bool] = []

    async def after_the_save_began() -> None:
        with anyio.move_on_after(10):  # settled in line, before the save, it would wait in vain
            await saved.wait()
        beside.append(saved.is_set())

    _slowed(store, after_the_save_began)
    ctx = _ctx()
    await _agent(store, tmp_path).call("go", ctx)
    assert beside == [True]
    assert await _used(store, _session_budget(ctx)) == (40, 0)
    assert usage_backend(store).settles.pending == 0


@pytest.mark.anyio
@pytest.mark.parametrize("store_spec", ["memory", "redis"], indirect=True)
async def test_a_loop_reply_returns_once_the_settles_of_its_calls_landed(
    store: BaseStore, store_spec: StoreSpec
) -> None:
    _slowed(store, lambda: anyio.sleep(0.2))
    agent = ReActAgent("a", _model(steps=2), config=ReActConfig(stream_model=False))
    name = "team:" + unique_namespace()
    with UsageGovernor(store).bind(), add_budget(name, Budget(max_tokens=10**6)):
        await agent.reply("go", AgentState(session_id="s"))
    assert await _used(store, name) == (80, 0)


@pytest.mark.anyio
@pytest.mark.parametrize("store_spec", ["memory", "redis"], indirect=True)
async def test_the_next_call_of_a_reply_waits_for_its_own_settle_not_for_the_budget(
    store: BaseStore, store_spec: StoreSpec
) -> None:
    """The first call reserves more than the whole budget (input + 100 output tokens); until its
    settle lands the second call's ask is refused as held by a call in flight, and with no time
    to wait for others (``budget_wait=0``) that would fail the reply."""
    _slowed(store, lambda: anyio.sleep(0.2))
    model = _model(steps=2)
    agent = ReActAgent("a", model, config=ReActConfig(stream_model=False))
    gov = UsageGovernor(store, max_output_tokens=100, budget_wait=0)
    name = "team:" + unique_namespace()
    with gov.bind(), add_budget(name, Budget(max_tokens=100)):
        await agent.reply("go", AgentState(session_id="s"))
    assert len(model.requests) == 2
    assert await _used(store, name) == (80, 0)


@pytest.mark.anyio
async def test_a_settle_that_fails_is_logged_counted_and_its_reservation_stays_held(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from agentscope_teams.store.memory import InMemoryStore

    store = InMemoryStore()

    async def fail() -> None:
        raise ConnectionError("store went away")

    _slowed(store, fail)
    ctx = _ctx()
    with caplog.at_level(logging.WARNING, "agentscope_teams.usage"):
        answer = await _agent(store, tmp_path).call("go", ctx)
    assert answer.get_text_content() == "ok"  # the call is done: its caller sees no store error
    assert "could not settle a model call's usage: store went away" in caplog.text
    assert usage_backend(store).settles.failed == 1
    settled, reserved = await _used(store, _session_budget(ctx))
    assert settled == 0 and reserved > 40  # held until its expiry: never under-counted


@pytest.mark.anyio
@pytest.mark.parametrize("store_spec", ["file", "redis"], indirect=True)
async def test_closing_the_agent_settles_what_a_cancelled_call_left_running(
    store: BaseStore, store_spec: StoreSpec, tmp_path: Path
) -> None:
    began = anyio.Event()

    async def slow() -> None:
        began.set()
        await anyio.sleep(0.3)

    _slowed(store, slow)
    agent = _agent(store, tmp_path)
    ctx = _ctx()
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.call, "go", ctx)
        await began.wait()
        tg.cancel_scope.cancel()  # the call stops waiting; its settle goes on
    assert usage_backend(store).settles.pending == 1
    await agent.aclose()
    assert usage_backend(store).settles.pending == 0
    assert await _used(store, _session_budget(ctx)) == (40, 0)


def _life(url: str, name: str, closes: str) -> None:
    """A process's life (a child process's target): open the store, one streamed loop reply (a
    stream leaves the settle to its caller), close the store, the governor or nothing (``closes``),
    and end the event loop at once."""

    async def life() -> None:
        store = store_from_url(url)
        await store.setup()
        _slowed(store, lambda: anyio.sleep(0.3))
        agent = ReActAgent("a", _model(), config=ReActConfig(stream_model=False))
        gov = UsageGovernor(store)
        with gov.bind(), add_budget(name, Budget(max_tokens=10**6)):
            async for _ in agent.reply_stream("go", AgentState(session_id="s")):
                pass
        if closes == "governor":
            await gov.aclose()
        elif closes == "store":
            await store.aclose()  # only the store: neither the agent nor the governor

    anyio.run(life)


def _lived(url: str, closes: str) -> tuple[int, int]:
    """(settled, reserved) tokens of the budget of one :func:`_life` in a process of its own."""
    name = "team:" + unique_namespace()
    child = multiprocessing.get_context("spawn").Process(target=_life, args=(url, name, closes))
    child.start()
    child.join(120)
    assert child.exitcode == 0, f"the child process ended with {child.exitcode}"

    async def read() -> tuple[int, int]:
        async with store_from_url(url) as store:
            return await _used(store, name)

    return anyio.run(read)


@pytest.mark.parametrize(
    "store_spec", ["file", "sqlite", "mariadb", "postgres", "redis"], indirect=True
)
def test_a_process_that_closes_only_its_store_and_ends_counts_its_last_call(
    store_spec: StoreSpec,
) -> None:
    assert _lived(store_spec.url, "store") == (40, 0)


@pytest.mark.parametrize("store_spec", ["file", "postgres", "redis"], indirect=True)
def test_a_process_that_closes_its_governor_and_ends_counts_its_last_call(
    store_spec: StoreSpec,
) -> None:
    assert _lived(store_spec.url, "governor") == (40, 0)
    # the control: nothing closed, the loop's end cancels the settle; the reservation is left to
    # expire
    settled, reserved = _lived(store_spec.url, "nothing")
    assert settled == 0 and reserved > 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    "store_spec", ["memory", "file", "sqlite", "mariadb", "postgres", "redis"], indirect=True
)
async def test_every_stores_close_waits_for_the_settles_running_on_it(
    store_spec: StoreSpec,
) -> None:
    store = store_spec.open()
    await store.setup()
    landed: list[str] = []

    async def settle() -> None:
        await anyio.sleep(0.2)
        landed.append("settled")

    settles = usage_backend(store).settles
    assert settles.start(settle) is not None
    await store.aclose()
    assert landed == ["settled"] and settles.pending == 0


@pytest.mark.anyio
async def test_a_store_closes_after_a_bounded_wait_and_logs_the_settles_left(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from agentscope_teams.store import closing
    from agentscope_teams.store.memory import InMemoryStore

    monkeypatch.setattr(closing, "LAND_SECONDS", 0.2)
    store, release = InMemoryStore(), anyio.Event()
    settles = usage_backend(store).settles
    settles.start(release.wait)
    with caplog.at_level(logging.WARNING, "agentscope_teams.store"), anyio.fail_after(5):
        await store.aclose()
    assert settles.pending == 1  # left running, not cancelled
    assert "closing InMemoryStore: 1 settles of model calls' usage still running" in caplog.text
    release.set()
    await settles.flush()


@pytest.mark.parametrize("store_spec", ["redis"], indirect=True)
def test_a_process_that_ends_right_after_a_call_counts_it(
    store_spec: StoreSpec, tmp_path: Path
) -> None:
    ctx = _ctx()

    async def life() -> None:
        agent = _agent(store_spec.url, tmp_path)  # the agent's own store, closed with it
        async with agent:
            _slowed(agent.store, lambda: anyio.sleep(0.3))
            await agent.call("go", ctx)

    async def read() -> tuple[int, int]:
        async with store_from_url(store_spec.url) as store:
            return await _used(store, _session_budget(ctx))

    anyio.run(life)
    assert anyio.run(read) == (40, 0)
