"""Shared helpers for the subagent runtime tests: scripted parents and children."""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.base import BaseStore
from agentscope_teams.subagents import RunBook, RunRecord, SubagentSpec
from agentscope_teams.subagents.extension import SubagentExtension

ALICE = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
BOB = RuntimeContext(session_id="s1", user_id="bob", org_id="acme")
RUN_ID = re.compile(r"\br-[0-9a-f]{10}\b")


def spec(name: str, **kw: Any) -> SubagentSpec:
    """A spec whose model is the scripted model registered under its own name."""
    return SubagentSpec(name=name, description=f"the {name} agent", model=name, **kw)


def make_parent(
    tmp_path: Path,
    store: BaseStore,
    script: Sequence[Any] | ScriptedModel,
    children: dict[str, ScriptedModel],
    specs: Sequence[SubagentSpec] | None = None,
    **options: Any,
) -> HarnessAgent:
    model = script if isinstance(script, ScriptedModel) else ScriptedModel(script, name="lead")
    return HarnessAgent(
        "lead",
        model,
        workspace=tmp_path / "ws",
        store=store,
        specs=list(specs) if specs is not None else [spec(n) for n in children],
        models=dict(children),
        **options,
    )


def extension(agent: HarnessAgent) -> SubagentExtension:
    return next(e for e in agent.extensions if isinstance(e, SubagentExtension))


def spawn(agent: str, task: str, **kw: Any) -> ModelResponse:
    return ScriptedModel.tool_call("agent_spawn", {"agent": agent, "task": task, **kw})


def call(name: str, **kw: Any) -> ModelResponse:
    return ScriptedModel.tool_call(name, kw)


def tool_results(request: ModelRequest) -> list[ToolResultBlock]:
    """The tool results of the newest message of ``request`` that has any."""
    for msg in reversed(request.messages):
        if msg.tool_results():
            return msg.tool_results()
    return []


def last_output(request: ModelRequest) -> str:
    results = tool_results(request)
    return results[-1].output if results else ""


def run_id_in(text: str) -> str:
    found = RUN_ID.search(text)
    assert found, f"no run id in {text!r}"
    return found.group(0)


def with_run(
    make: Callable[[str], ModelResponse],
) -> Callable[[ModelRequest], ModelResponse]:
    """A script step that uses the run id found in the newest tool result."""
    return lambda req: make(run_id_in(last_output(req)))


def all_text(request: ModelRequest) -> str:
    parts: list[str] = []
    for msg in request.messages:
        parts.append(msg.get_text_content())
        parts += [r.output for r in msg.tool_results()]
    return "\n".join(parts)


async def runs(store: BaseStore, ctx: RuntimeContext = ALICE) -> list[RunRecord]:
    return await RunBook.for_ctx(store, ctx).list()


def is_dir(path: str | Path | None) -> bool:
    return path is not None and Path(path).is_dir()


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await anyio.sleep(0.02)


async def settled(store: BaseStore, ctx: RuntimeContext = ALICE) -> list[RunRecord]:
    """Wait until no run of ``ctx``'s session is active (and background ones were notified)."""

    async def done() -> bool:
        found = await runs(store, ctx)
        return all(not r.status.active and (r.notified or not r.background) for r in found)

    await eventually(done)
    return await runs(store, ctx)
