"""What a call holds while it waits for its model, counted (issue 26: framework CPU).

At 1,000 concurrent calls every object a call holds in flight outlives two young collections and is
promoted to the oldest generation, whose full collections walk the whole heap: the fewer objects
each call holds, the fewer full collections. Counted here from the call's task over the objects made
since the call started, while the model's request is pending (tracing and metrics off, no usage
governor, no hooks, no extensions): the ``with`` scopes of the call hold one bound ``__exit__``
each only when they have state (the context's, the session guard's; the no-op span and usage scope
hold their static ``__exit__``, not a bound method made per call), the lease's heartbeat timer holds
the heartbeat itself, and the per-call working objects have no ``__dict__``.
"""

from __future__ import annotations

import asyncio
import gc
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.agent import ReActConfig
from agentscope_teams.message import TextBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.store import InMemoryStore, RedisStore
from agentscope_teams.tracing import metrics


@pytest.fixture(autouse=True)
def _metrics_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Metrics off, as the module docstring says: an app built earlier in this process (a server
    test's ``create_app``) turns the process's metrics on and leaves them on."""
    monkeypatch.setattr(metrics, "METRICS", None)


#: Bound methods a waiting call holds (Redis: the lease's guard; in memory the same, its guard
#: holding no lease): the context's ``__exit__``, the session guard's ``__aexit__``, the archiver
#: the reply options carry, and the usage ``model_call`` scope of the model step.
HELD_METHODS = [
    "SessionGuard.__aexit__",
    "VarScope.__exit__",
    "_Saves.archive",
]
#: Per-call objects of the framework that are slotted (no ``__dict__`` held beside them).
SLOTTED = {"CallScope", "ReplyOptions", "_Reply", "VarScope", "_Saves"}


class WaitingModel:
    """Answers "done" once released; ``waiting`` is set while a request is pending."""

    model_name = "waiting"

    def __init__(self) -> None:
        self.waiting = anyio.Event()
        self.release = anyio.Event()

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.waiting.set()
        await self.release.wait()
        return ModelResponse(content=[TextBlock(text="done")])

    async def stream(self, request: ModelRequest) -> Any:
        yield await self.generate(request)


def _name(o: object) -> str:
    if type(o).__name__ == "method":
        return "method " + getattr(o.__func__, "__qualname__", "?")  # type: ignore[attr-defined]
    return type(o).__name__


def _held(root: object, before: set[int]) -> Counter[str]:
    """The objects reachable from ``root`` that were made after ``before`` was taken."""
    found: Counter[str] = Counter()
    seen, stack = {id(root)}, [root]
    while stack:
        for ref in gc.get_referents(stack.pop()):
            if id(ref) not in seen and id(ref) not in before and gc.is_tracked(ref):
                seen.add(id(ref))
                stack.append(ref)
                found[_name(ref)] += 1
    return found


async def _held_while_waiting(store: Any, workspace: Path) -> Counter[str]:
    model = WaitingModel()
    bot = HarnessAgent(
        "held", model, workspace=workspace, store=store, builtin_tools=False,
        config=ReActConfig(stream_model=False),
    )  # fmt: skip
    model.release.set()
    await bot.call("warm up", RuntimeContext(session_id="s0", user_id="u1"))
    model.waiting, model.release = anyio.Event(), anyio.Event()
    gc.collect()
    alive = gc.get_objects()  # kept alive: no new object can take the id of one of them
    task = asyncio.ensure_future(bot.call("hello", RuntimeContext(session_id="s1", user_id="u1")))
    await model.waiting.wait()
    held = _held(task, {id(o) for o in alive})
    del alive
    model.release.set()
    assert (await task).get_text_content() == "done"
    return held


def _check(held: Counter[str]) -> None:
    methods = sorted(n.removeprefix("method ") for n in held.elements() if n.startswith("method "))
    assert methods == HELD_METHODS
    assert held["_GeneratorContextManager"] == 0  # no @contextmanager generator on the way
    assert {n: held[n] for n in SLOTTED if held[n] != 1} == {}
    dicts_of = [
        type(o).__name__
        for o in gc.get_objects()
        if type(o).__name__ in SLOTTED and hasattr(o, "__dict__")
    ]
    assert dicts_of == []


async def test_a_waiting_call_on_redis_holds_only_the_scopes_with_state(
    redis_store: RedisStore, tmp_path: Path
) -> None:
    held = await _held_while_waiting(redis_store, tmp_path)
    _check(held)
    assert held["_Heartbeat"] == 1 and held["TimerHandle"] == 1  # the lease's timer, no task
    assert held["CancelScope"] == 0


async def test_a_waiting_call_in_memory_holds_only_the_scopes_with_state(tmp_path: Path) -> None:
    held = await _held_while_waiting(InMemoryStore(), tmp_path)
    _check(held)
    assert held["_Heartbeat"] == 0  # no lease: the store is private to this process
