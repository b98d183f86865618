"""Shared pieces of the agent tests, importable by spawned child processes (top-level only).

The scripted "brain" answers from the request alone, so every process behaves the same:
``use <tool> <json args>`` calls that tool, a tool result is answered with ``done: <outputs>``,
anything else with ``echo: <text>``.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import queue
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from agentscope_teams import HarnessAgent
from agentscope_teams.agent import ReActConfig
from agentscope_teams.context import RuntimeContext
from agentscope_teams.events import (
    AgentEvent,
    ReplyEndEvent,
    RequireUserConfirmEvent,
    UserConfirmResultEvent,
)
from agentscope_teams.message import Msg, ToolResultBlock, ToolUseBlock
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.state import AgentState
from agentscope_teams.store import BaseStore, StoreBackend, store_from_url
from agentscope_teams.tools import Tool, ToolEnv, tool

CHILD_TIMEOUT = 60.0


# -- stores and contexts ------------------------------------------------------------------------


@dataclass(frozen=True)
class StoreArgs:
    """A store another process can open: a URL plus, for Redis, a namespace unique to the test."""

    url: str
    namespace: str | None = None

    def open(self) -> StoreBackend:
        if self.namespace is None:
            return store_from_url(self.url)
        return store_from_url(self.url, namespace=self.namespace)


@dataclass(frozen=True)
class Setup:
    """Everything a child needs to build the same HarnessAgent as the parent."""

    store: StoreArgs
    workspace: Path
    session_id: str
    user_id: str = "alice"
    org_id: str = "acme"
    agent_name: str = "lead"
    lease_ttl: float = 30.0
    busy_timeout: float = 30.0
    log: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def ctx(self) -> RuntimeContext:
        return RuntimeContext(session_id=self.session_id, user_id=self.user_id, org_id=self.org_id)


def build_agent(setup: Setup, store: BaseStore, model: ScriptedModel | None = None) -> HarnessAgent:
    """The HarnessAgent of the multi-process tests: the brain model and the recording tools."""
    return HarnessAgent(
        setup.agent_name,
        model or ScriptedModel(brain),
        "You are a test agent.",
        workspace=setup.workspace,
        store=store,
        tools=recording_tools(setup.log or setup.workspace / "log.jsonl"),
        builtin_tools=False,
        lease_ttl=setup.lease_ttl,
        busy_timeout=setup.busy_timeout,
        config=ReActConfig(stream_model=False),
    )


# -- the scripted brain -------------------------------------------------------------------------


def brain(request: ModelRequest) -> ModelResponse | str:
    """Answer from the request alone (see the module docstring)."""
    last = request.messages[-1]
    results = last.tool_results()
    if results:
        return "done: " + "; ".join(r.output for r in results)
    text = last.get_text_content()
    if text.startswith("use ") and request.tools:
        _, name, args = text.split(" ", 2)
        return ScriptedModel.tool_call(name, json.loads(args))
    return "echo: " + text


# -- tools that record what they did ------------------------------------------------------------


def record(log: Path, **entry: Any) -> None:
    """Append one JSON line to ``log`` (O_APPEND: safe across processes)."""
    line = json.dumps({**entry, "pid": os.getpid(), "t": time.monotonic()}) + "\n"
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_log(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def recording_tools(log: Path) -> list[Tool]:
    """``slow`` (sleeps, logs start/end), ``block`` (waits for a gate file), ``guarded`` (asks
    for confirmation, logs its side effect) and ``whoami`` (the session it runs for)."""

    async def slow(label: str, seconds: float = 0.3) -> str:
        """Sleep a little, recording start and end."""
        record(log, event="start", label=label)
        await anyio.sleep(seconds)
        record(log, event="end", label=label)
        return f"slept {label}"

    async def block(label: str, gate: str = "") -> str:
        """Block until the gate file exists (forever without one)."""
        record(log, event="start", label=label)
        while not (gate and await anyio.Path(gate).exists()):  # noqa: ASYNC110 - another process
            await anyio.sleep(0.02)
        record(log, event="end", label=label)
        return f"unblocked {label}"

    async def guarded(text: str) -> str:
        """A side effect that needs the user's confirmation."""
        record(log, event="effect", label=text)
        return f"wrote {text}"

    async def whoami(env: ToolEnv) -> str:
        """The session this call runs for."""
        assert env.ctx is not None
        return env.ctx.session_id

    return [
        tool(slow),
        tool(block),
        tool(guarded, requires_confirmation=True),
        tool(whoami, read_only=True),
    ]


# -- checks on what the model saw ---------------------------------------------------------------


def orphans(messages: list[Msg]) -> tuple[list[str], list[str]]:
    """(tool_use ids without a result, tool_result ids without a call) in ``messages``."""
    uses = [b.id for m in messages for b in m.blocks if isinstance(b, ToolUseBlock)]
    results = [b.tool_use_id for m in messages for b in m.blocks if isinstance(b, ToolResultBlock)]
    return [u for u in uses if u not in results], [r for r in results if r not in uses]


def results_of(messages: list[Msg]) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for m in messages for b in m.tool_results()}


def transcript(messages: list[Msg]) -> list[tuple[str, str]]:
    return [(m.role, m.get_text_content()) for m in messages]


# -- child-process entry points -----------------------------------------------------------------


def child_call(setup: Setup, input: Any) -> dict[str, Any]:
    """One ``call`` in this (fresh) process; returns the reply, the events and the model requests."""

    async def main() -> dict[str, Any]:
        model = ScriptedModel(brain)
        async with setup.store.open() as store:
            agent = build_agent(setup, store, model)
            events: list[AgentEvent] = [e async for e in agent.stream(input, setup.ctx)]
        final = events[-1]
        assert isinstance(final, ReplyEndEvent)
        confirm = [e for e in events if isinstance(e, RequireUserConfirmEvent)]
        return {
            "text": final.msg.get_text_content(),
            "events": [e.type for e in events],
            "confirm": confirm[0].model_dump(mode="json") if confirm else None,
            "requests": [r.model_dump_json() for r in model.requests],
        }

    return anyio.run(main)


def child_confirm(setup: Setup, reply_id: str, call_id: str) -> dict[str, Any]:
    """Confirm one paused call from this process."""
    event = UserConfirmResultEvent.model_validate(
        {"reply_id": reply_id, "results": [{"tool_call_id": call_id, "confirmed": True}]}
    )
    return child_call(setup, event)


def requests_of(result: dict[str, Any]) -> list[ModelRequest]:
    return [ModelRequest.model_validate_json(r) for r in result["requests"]]


def run_fresh(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` in a new spawned process and return its result (raises its error)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result(timeout=CHILD_TIMEOUT)


def _child_main(fn: Callable[..., Any], out: Any, barrier: Any, args: tuple[Any, ...]) -> None:
    try:
        if barrier is not None:
            barrier.wait(timeout=CHILD_TIMEOUT)
        out.put((True, fn(*args)))
    except BaseException:
        out.put((False, traceback.format_exc()))


@dataclass
class Child:
    """A spawned process running ``fn(*args)``; its result arrives on ``out``."""

    process: Any
    out: Any
    barrier: Any = None  # kept alive until the child has started

    def result(self, timeout: float = CHILD_TIMEOUT) -> Any:
        try:
            ok, value = self.out.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"child did not finish within {timeout}s") from None
        if not ok:
            raise AssertionError(f"child failed:\n{value}")
        self.process.join(timeout=10)
        return value

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=10)


def start_children(fn: Callable[..., Any], arglist: list[tuple[Any, ...]]) -> list[Child]:
    """Spawn one process per args; when there are several they start ``fn`` together."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(arglist)) if len(arglist) > 1 else None
    children = []
    for args in arglist:
        out = ctx.Queue()
        p = ctx.Process(target=_child_main, args=(fn, out, barrier, args), daemon=True)
        p.start()
        children.append(Child(p, out, barrier))
    return children


def wait_until(predicate: Callable[[], bool], timeout: float = CHILD_TIMEOUT) -> None:
    """Poll ``predicate`` (sync) until it holds; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached within {timeout}s")
        time.sleep(0.02)


async def saved_state(setup: Setup) -> AgentState | None:
    """The state of the setup's session as the store holds it now (None if absent)."""
    from agentscope_teams.sessions import SessionStorage

    async with setup.store.open() as store:
        record = await SessionStorage(store).get_session(
            setup.user_id, setup.agent_name, setup.session_id, org_id=setup.org_id
        )
    return None if record is None else record.state


def state_has_pending_call(setup: Setup) -> bool:
    state = anyio.run(saved_state, setup)
    return state is not None and state.has_awaiting_tool_calls()


def iter_tool_uses(messages: list[Msg]) -> Iterator[ToolUseBlock]:
    for m in messages:
        yield from m.tool_uses()
