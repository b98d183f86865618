"""Tasks and async generators per call, counted deterministically (issue 26: framework CPU).

At 1,000 concurrent calls a third of the framework's CPU is the garbage collector walking what the
calls in flight hold; every task (a task object, its context, two or three scheduled callbacks) and
every async generator (a frame kept alive between events) adds to it. A one-step call on Redis
starts no task of its own: the session lease's heartbeat is a timer until the call outlives a third
of the lease's TTL, and a Redis command's write is timed by a timer rather than ``wait_for`` (a
task per command on Python 3.11). Counted with the event loop's task factory and the async
generator hooks, around a call on a new session and one on an existing session.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.agent import ReActConfig
from agentscope_teams.store import InMemoryStore, RedisStore
from agentscope_teams.tools import tool

from ..backends import REDIS_URL, unique_namespace
from ..conftest import require_service
from .conftest import _drop_redis_namespace

#: Async generators of one call, one model step without tools: the reply stream and its steps
#: (reply_stream, start, begin, the loop, injection and the reasoning step, the model call).
ONE_STEP_GENERATORS = 7
#: ... and a call of two steps, the first calling a tool: a second reasoning step and its model
#: call and injection, and the tool step (act, run tools).
TOOL_STEP_GENERATORS = 12


class Created:
    """The tasks (by coroutine name) and async generators (by name) created while counting."""

    def __init__(self) -> None:
        self.tasks: list[str] = []
        self.generators: list[str] = []

    @contextmanager
    def counting(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        factory = loop.get_task_factory()
        first, final = sys.get_asyncgen_hooks()

        def task(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> Any:
            self.tasks.append(getattr(coro, "__qualname__", repr(coro)))
            return asyncio.Task(coro, loop=loop, **kw)

        def firstiter(agen: Any) -> None:
            self.generators.append(agen.__qualname__)
            if first is not None:
                first(agen)

        loop.set_task_factory(task)
        sys.set_asyncgen_hooks(firstiter=firstiter, finalizer=final)
        try:
            yield
        finally:
            loop.set_task_factory(factory)
            sys.set_asyncgen_hooks(firstiter=first, finalizer=final)


@pytest.fixture
async def redis_store() -> AsyncIterator[RedisStore]:
    require_service("redis")
    namespace = unique_namespace()
    async with RedisStore(REDIS_URL, namespace=namespace) as store:
        yield store
    await _drop_redis_namespace(namespace)


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
        assert len(created.generators) == ONE_STEP_GENERATORS, created.generators


async def test_a_tool_step_call_on_redis_starts_no_task(
    redis_store: RedisStore, tmp_path: Path
) -> None:
    """Three Redis commands (lease, the save before the tool, the last save), no task."""
    replies = (ScriptedModel.tool_call("poke", {}), "done")
    for created in await _counted_calls(redis_store, tmp_path, *replies):
        assert created.tasks == []
        assert len(created.generators) == TOOL_STEP_GENERATORS, created.generators


async def test_a_one_step_call_in_memory_starts_no_task(tmp_path: Path) -> None:
    for created in await _counted_calls(InMemoryStore(), tmp_path, "hi"):
        assert created.tasks == []
        assert len(created.generators) == ONE_STEP_GENERATORS, created.generators


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
