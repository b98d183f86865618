"""ReAct loop overhead per iteration: 20 no-op tool iterations per reply, model answers at once.

The model costs nothing, so the time is the loop's own: building requests, recording responses,
permission checks, running the tool, appending results, compression checks, events. Side by side:

* agentscope_teams ``ReActAgent`` with a counting scripted model (tool call x 20, then "done"), the
  same model as the anchor's;
* the same loop driven by agentscope_teams' ``ScriptedModel`` (function form), which records a
  snapshot of every request it receives in ``.requests``: the test double's cost, shown for reference;
* AgentScope 2.0.11 ``Agent`` with an equivalent scripted model and an always-allowed no-op tool,
  run by ``anchor_react.py`` in the anchor virtualenv (skipped with a note when that is absent).

Per iteration = reply time / 20. Default loop configurations on both sides (compression on), no
streaming, a fresh state per reply.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from agentscope_teams.agent import ReActAgent, ReActConfig
from agentscope_teams.message import TextBlock, ToolUseBlock, new_id
from agentscope_teams.model.base import ModelRequest, ModelResponse, StreamItem
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.state import AgentState
from agentscope_teams.tools import Toolkit

from .anchor import Anchor, AnchorError, anchor_python, skip_note
from .fixtures import noop
from .stats import RoundFn, Sample, compare, fmt, ratio, section, table, timed, us, verdict

TOOL_ITERS = 20
TARGET = 5.0


class CountingModel:
    """``TOOL_ITERS`` no-op tool calls, then "done"; one session at a time (a plain counter)."""

    model_name = "counting"

    def __init__(self, tool_iters: int) -> None:
        self.tool_iters, self.calls = tool_iters, 0

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.calls <= self.tool_iters:
            call = ToolUseBlock(id=new_id("call_"), name="noop")
            return ModelResponse(content=[call], stop_reason="tool_use")
        self.calls = 0
        return ModelResponse(content=[TextBlock(text="done")])

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        yield await self.generate(request)


def _scripted(tool_iters: int) -> ScriptedModel:
    counter = CountingModel(tool_iters)

    def step(request: ModelRequest) -> ModelResponse:
        counter.calls += 1
        if counter.calls <= tool_iters:
            return ScriptedModel.tool_call("noop")
        counter.calls = 0
        return ScriptedModel.text("done")

    return ScriptedModel(step)


def _reply(model: CountingModel | ScriptedModel) -> RoundFn:
    config = ReActConfig(max_iters=TOOL_ITERS + 5, stream_model=False)
    agent = ReActAgent("bench", model, "You are a benchmark.", Toolkit([noop]), config)

    async def one(_: int) -> None:
        state = AgentState(session_id="bench")
        final = await agent.reply("go", state)
        if final.get_text_content() != "done":
            raise RuntimeError(f"unexpected final answer {final.get_text_content()!r}")
        if isinstance(model, ScriptedModel):
            model.requests.clear()

    return timed(one)


async def run(fast: bool = False) -> str:
    ops, rounds = (2, 3) if fast else (20, 15)
    named: dict[str, RoundFn] = {
        "ours": _reply(CountingModel(TOOL_ITERS)),
        "scripted": _reply(_scripted(TOOL_ITERS)),
    }
    note = ""
    if anchor_python() is None:
        note = skip_note()
        samples = await compare(named, ops=ops, rounds=rounds)
    else:
        try:
            async with Anchor("anchor_react.py", str(TOOL_ITERS)) as anchor:
                named["anchor"] = anchor.round
                samples = await compare(named, ops=ops, rounds=rounds)
        except AnchorError as exc:
            note = f"anchor failed: {exc}"
            named.pop("anchor", None)
            samples = await compare(named, ops=ops, rounds=rounds)
    per_iter = {k: Sample(k, [v / TOOL_ITERS for v in s.per_op]) for k, s in samples.items()}
    return _report(per_iter, note)


def _report(s: dict[str, Sample], note: str) -> str:
    ours = s["ours"]
    rows = [
        ["agentscope_teams ReActAgent, counting scripted model", fmt(ours), "1.00"],
        [
            "agentscope_teams ReActAgent, ScriptedModel (records request snapshots)",
            fmt(s["scripted"]),
            f"{ratio(s['scripted'], ours):.2f}",
        ],
    ]
    if "anchor" in s:
        rows.append(
            [
                "AgentScope 2.0.11 Agent, equivalent scripted model",
                fmt(s["anchor"]),
                f"{ratio(s['anchor'], ours):.2f}",
            ]
        )
        lower = ratio(s["anchor"], ours)
        line = f"≥ {TARGET}x lower than AgentScope 2.0.11: {lower:.2f}x — " + verdict(
            lower >= TARGET, "see the profile notes in the report"
        )
    else:
        line = f"≥ {TARGET}x lower than AgentScope 2.0.11: {note}"
    body = table(["loop", "µs per iteration", "x agentscope_teams"], rows)
    intro = (
        f"One reply = {TOOL_ITERS} iterations of (model call → no-op tool → result) plus the final "
        f"answer; µs per iteration = reply time / {TOOL_ITERS} "
        f"(agentscope_teams: {us(ours.median * TOOL_ITERS)} µs per reply). Median over "
        "interleaved rounds ± interquartile spread."
    )
    return section("ReAct loop overhead per iteration", intro, body, [line])
