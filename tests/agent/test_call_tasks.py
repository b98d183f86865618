"""Tasks, async generators and generator context managers per call, counted deterministically
(issue 26: framework CPU).

At 1,000 concurrent calls a third of the framework's CPU is the garbage collector walking what the
calls in flight hold; every task (a task object, its context, two or three scheduled callbacks) and
every async generator (a frame kept alive between events, resumed per event by every layer above it)
adds to it. A one-step call on Redis starts no task of its own: the session lease's heartbeat is a
timer until the call outlives a third of the lease's TTL, and a Redis command's write is timed by a
timer rather than ``wait_for`` (a task per command on Python 3.11). The reply is one async generator
(``_Reply.run``) whose steps are plain calls, but for the model call (``_reason`` and the usage
governor's ``model_call``) and a step's tool runs (``_run_tools``), which yield as they go; with
tracing and metrics off the ``invoke_agent`` span is a shared no-op, not a generator, and the
context and tool env are set by small classes, not ``@contextmanager`` generators. Counted with
the event loop's task factory, the async generator hooks and ``contextlib``'s generator context
manager, around a call on a new session and one on an existing session.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio._backends import _asyncio as anyio_asyncio

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.agent import ReActConfig
from agentscope_teams.store import InMemoryStore, RedisStore
from agentscope_teams.tools import tool

#: Async generators of one call, one model step without tools: the reply and its reasoning step
#: (the usage governor's ``model_call`` is a shared no-op object without a governor).
ONE_STEP_GENERATORS = ["_Reply.run", "_Reply._reason"]
#: ... and a call of two steps, the first calling a tool: the tool runs and a second model call.
TOOL_STEP_GENERATORS = ["_Reply.run", "_Reply._reason", "StepRunner._run_tools", "_Reply._reason"]
#: ``@contextmanager`` objects of a call (tracing off): none; ``use_context`` (the call's
#: ``RuntimeContext``) and ``use_tool_env`` (a tool step's ``ToolEnv``) are small classes.
ONE_STEP_CONTEXT_MANAGERS: list[str] = []
TOOL_STEP_CONTEXT_MANAGERS: list[str] = []


class Created:
    """The tasks (by coroutine name), async generators and ``@contextmanager`` objects (by
    function name) created while counting."""

    def __init__(self) -> None:
        self.tasks: list[str] = []
        self.generators: list[str] = []
        self.context_managers: list[str] = []

    @contextmanager
    def counting(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        factory = loop.get_task_factory()
        first, final = sys.get_asyncgen_hooks()
        made = contextlib._GeneratorContextManager.__init__

        def task(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> Any:
            self.tasks.append(getattr(coro, "__qualname__", repr(coro)))
            return asyncio.Task(coro, loop=loop, **kw)

        def firstiter(agen: Any) -> None:
            self.generators.append(agen.__qualname__)
            if first is not None:
                first(agen)

        def context_manager(cm: Any, func: Any, args: Any, kwds: Any) -> None:
            self.context_managers.append(func.__qualname__)
            made(cm, func, args, kwds)

        loop.set_task_factory(task)
        sys.set_asyncgen_hooks(firstiter=firstiter, finalizer=final)
        contextlib._GeneratorContextManager.__init__ = context_manager  # type: ignore[method-assign]
        try:
            yield
        finally:
            contextlib._GeneratorContextManager.__init__ = made  # type: ignore[method-assign]
            loop.set_task_factory(factory)
            sys.set_asyncgen_hooks(firstiter=first, finalizer=final)


@tool
async def poke() -> str:
    """Change something."""
    return "poked"


def _agent(store: Any, workspace: Path, *replies: Any) -> HarnessAgent:
    return HarnessAgent(
        "counted", ScriptedModel(list(replies)), workspace=workspace, store=store, tools=[poke],
        builtin_tools=False, config=ReActConfig(stream_model=False),
    )  # fmt: skip


async def _counted_calls(store: Any, workspace: Path, *replies: Any) -> list[Created]:
    """A warm-up call (connections, scripts), then one on a new session and one on the same."""
    bot = _agent(store, workspace, *replies, *replies, *replies)
    await bot.call("warm up", RuntimeContext(session_id="s0", user_id="u1"))
    ctx = RuntimeContext(session_id="s1", user_id="u1")
    counts = []
    for prompt in ("hello", "again"):
        created = Created()
        with created.counting():
            await bot.call(prompt, ctx)
        counts.append(created)
    return counts


async def test_a_one_step_call_on_redis_starts_no_task(
    redis_store: RedisStore, tmp_path: Path
) -> None:
    for created in await _counted_calls(redis_store, tmp_path, "hi"):
        assert created.tasks == []
        assert created.generators == ONE_STEP_GENERATORS
        assert created.context_managers == ONE_STEP_CONTEXT_MANAGERS


async def test_a_tool_step_call_on_redis_starts_no_task(
    redis_store: RedisStore, tmp_path: Path
) -> None:
    """Three Redis commands (lease, the save before the tool, the last save), no task."""
    replies = (ScriptedModel.tool_call("poke", {}), "done")
    for created in await _counted_calls(redis_store, tmp_path, *replies):
        assert created.tasks == []
        assert created.generators == TOOL_STEP_GENERATORS
        assert created.context_managers == TOOL_STEP_CONTEXT_MANAGERS


async def test_a_one_step_call_in_memory_starts_no_task(tmp_path: Path) -> None:
    for created in await _counted_calls(InMemoryStore(), tmp_path, "hi"):
        assert created.tasks == []
        assert created.generators == ONE_STEP_GENERATORS
        assert created.context_managers == ONE_STEP_CONTEXT_MANAGERS


async def test_a_call_that_outlives_a_third_of_its_lease_ttl_starts_the_heartbeat(
    redis_store: RedisStore, tmp_path: Path
) -> None:
    """The control of the tests above: the heartbeat is a task once the call lasts long enough."""

    @tool
    async def linger() -> str:
        """Take a while."""
        await asyncio.sleep(0.25)
        return "done lingering"

    bot = HarnessAgent(
        "counted", ScriptedModel([ScriptedModel.tool_call("linger", {}), "done"]),
        workspace=tmp_path, store=redis_store, tools=[linger], builtin_tools=False,
        config=ReActConfig(stream_model=False), lease_ttl=0.3,
    )  # fmt: skip
    created = Created()
    with created.counting():
        await bot.call("go", RuntimeContext(session_id="s1", user_id="u1"))
    assert created.tasks == ["Lease.heartbeat"]


async def test_a_call_on_redis_enters_no_cancel_scope(
    redis_store: RedisStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease's end shields only what has work to do: stopping a heartbeat that is still a
    timer, and releasing a lease the last save already gave back, need no shielded cancel scope."""
    made: list[bool] = []
    backend = anyio_asyncio.CancelScope  # what anyio.CancelScope() makes on asyncio
    init = backend.__init__

    def counted(scope: Any, *args: Any, **kwargs: Any) -> None:
        made.append(kwargs.get("shield", False))
        init(scope, *args, **kwargs)

    bot = _agent(redis_store, tmp_path, "hi", "hi")
    await bot.call("warm up", RuntimeContext(session_id="s0", user_id="u1"))
    monkeypatch.setattr(backend, "__init__", counted)
    await bot.call("hello", RuntimeContext(session_id="s1", user_id="u1"))
    assert made == []
