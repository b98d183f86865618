"""Subagent spawn overhead: what a synchronous ``agent_spawn`` costs on top of the same work inline.

Every model is a ``ScriptedModel`` answering at once, so the figures are the framework's own cost:
run record writes (CAS), lease, isolated directory create + remove, the child's session load / save
and the parent's inbox check. Rows, per operation (median over rounds, interquartile spread):

* ``child call``: a plain ``HarnessAgent.call`` answering in one step (what the child does);
* ``parent + no-op tool``: a parent step calling a trivial tool, then answering (the parent's share);
* ``parent + agent_spawn``: the same parent step spawning the child instead (isolated or shared).

"overhead" is the spawn row minus the two inline rows: the price of delegating.
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path
from typing import Any

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.subagents import SubagentSpec
from agentscope_teams.tools import tool

from .stats import Sample, measure, table, us


@tool
async def noop() -> str:
    """Do nothing."""
    return "ok"


def _parent_script(first: ModelResponse) -> ScriptedModel:
    def step(req: ModelRequest) -> ModelResponse | str:
        return "ok" if req.messages and req.messages[-1].tool_results() else first

    return ScriptedModel(step, name="parent")


def _agents(root: Path, store: BaseStore) -> dict[str, HarnessAgent]:
    child = ScriptedModel(lambda req: "done", name="worker")
    common: dict[str, Any] = {"store": store, "workspace": root, "models": {"worker": child}}
    spawn = ScriptedModel.tool_call("agent_spawn", {"agent": "worker", "task": "do it"})
    agents = {
        "child call": HarnessAgent("worker", child, workspace=root, store=store),
        "parent + no-op tool": HarnessAgent(
            "lead",
            _parent_script(ScriptedModel.tool_call("noop")),
            workspace=root,
            store=store,
            tools=[noop],
        ),
    }
    for mode in ("isolated", "shared"):
        spec = SubagentSpec(name="worker", description="w", model="worker", workspace=mode)
        agents[f"parent + agent_spawn ({mode})"] = HarnessAgent(
            f"lead-{mode}", _parent_script(spawn), specs=[spec], **common
        )
    return agents


async def _measure_store(url: str, root: Path, ops: int, rounds: int) -> list[Sample]:
    counter = itertools.count()
    samples: list[Sample] = []
    async with store_from_url(url) as store:
        for name, agent in _agents(root, store).items():

            async def op(i: int, agent: HarnessAgent = agent) -> None:
                ctx = RuntimeContext(session_id=f"s{next(counter)}", user_id="bench")
                await agent.call("go", ctx)

            samples.append(await measure(name, op, ops=ops, rounds=rounds))
    return samples


async def run(fast: bool) -> str:
    """The markdown section of this benchmark."""
    ops, rounds = (3, 3) if fast else (40, 12)
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        urls = {"memory": "memory://", "file": f"file://{Path(tmp) / 'store'}"}
        for backend, url in urls.items():
            samples = await _measure_store(url, Path(tmp) / backend, ops, rounds)
            by_name = {s.name: s for s in samples}
            inline = by_name["child call"].median + by_name["parent + no-op tool"].median
            for s in samples:
                extra = us(s.median - inline) if "agent_spawn" in s.name else ""
                rows.append([backend, s.name, us(s.median), f"{s.spread:.0%}", extra])
    headers = ["store", "operation", "median µs/op", "spread (IQR)", "overhead µs"]
    return (
        "## Subagent spawn overhead\n\n"
        f"{ops} operations x {rounds} rounds; overhead = spawn - (child call + parent no-op "
        "tool).\n\n" + table(headers, rows)
    )
