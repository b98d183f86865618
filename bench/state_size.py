"""State size over 1,000 turns of one session with context compression on.

One ``HarnessAgent`` session on the in-memory store; each turn sends a ~400-character question, the
model calls a no-op tool, then answers with ~600 characters. Compression is configured small so it
runs many times: ``trigger_tokens`` 4,000, ``keep_recent_tokens`` 1,000, ``summary_max_chars``
2,000; the scripted summary is as long as the transcript it replaces, so only the cap bounds it.

The configured budget, in the loop's own estimate (characters / 4 per block, + 4 per message), is
what compression promises: before each model call the context is at most ``trigger_tokens``, so after
a turn it is at most ``trigger_tokens`` + that turn's messages, and the summary at most
``summary_max_chars``. The section checks that bound after every turn, and that the persisted record
stops growing (its largest size in the second half of the run is within 5% of the largest in the
first half, which already includes compressions).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio

from agentscope_teams import HarnessAgent
from agentscope_teams.agent import CompressionConfig, ReActConfig
from agentscope_teams.agent.compression import estimate_tokens
from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import Msg, TextBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.sessions import session_key
from agentscope_teams.store import InMemoryStore

from .fixtures import BareModel, noop
from .stats import Sample, fmt, section, table, verdict

COMPRESSION = CompressionConfig(
    trigger_tokens=4000, keep_recent_tokens=1000, summary_max_chars=2000
)
QUESTION = "Turn {i}: please check the next module for unused imports and report back. " * 5
SLACK = 0.05  # turn numbers grow by a digit now and then: "Turn 999" is longer than "Turn 99"
ANSWER = "Checked: the module imports json, re and typing; only typing is unused, remove it. " * 7


class TurnModel(BareModel):
    """One no-op tool call, then a ~600-character answer; summaries as long as their input."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        response = await super().generate(request)
        if response.tool_calls or request.metadata.get("purpose") == "compression":
            return response
        return ModelResponse(content=[TextBlock(text=ANSWER)])


def _tokens(state_summary: str, context: list[Msg]) -> int:
    return len(state_summary) // 4 + sum(estimate_tokens(m) for m in context)


async def run(fast: bool = False) -> str:
    turns = 120 if fast else 1000
    store = InMemoryStore()
    config = ReActConfig(max_iters=5, compression=COMPRESSION, stream_model=False)
    ctx = RuntimeContext(session_id="long-session", user_id="bench")
    key = session_key(None, "bench", "agent", ctx.session_id)
    sizes: list[int] = []
    over: list[tuple[int, int, int]] = []
    summary_max = 0
    with tempfile.TemporaryDirectory() as tmp:
        agent = HarnessAgent(
            "agent",
            TurnModel(tool_iters=1),
            workspace=Path(tmp),
            store=store,
            tools=[noop],
            config=config,
        )
        for i in range(turns):
            before = len((await agent.get_agent_state(ctx)).context)
            await agent.call(QUESTION.format(i=i), ctx)
            state = await agent.get_agent_state(ctx)
            entry = await store.get(key)
            assert entry is not None
            sizes.append(len(entry.value))
            turn_tokens = sum(estimate_tokens(m) for m in state.context[before:])
            bound = COMPRESSION.trigger_tokens + turn_tokens + COMPRESSION.summary_max_chars // 4
            used = _tokens(state.summary, state.context)
            if used > bound:
                over.append((i + 1, used, bound))
            summary_max = max(summary_max, len(state.summary))
        archive = await anyio.to_thread.run_sync(_archive_bytes, Path(tmp))
    return _report(sizes, over, summary_max, archive, turns)


def _archive_bytes(root: Path) -> int:
    return sum(f.stat().st_size for f in root.rglob("*.jsonl"))


def _report(
    sizes: list[int], over: list[tuple[int, int, int]], summary_max: int, archive: int, turns: int
) -> str:
    half = turns // 2
    checkpoints = sorted({1, 10, 100, half, turns} & set(range(1, turns + 1)))
    rows = [[str(t), f"{sizes[t - 1]:,}"] for t in checkpoints]
    first, second = max(sizes[:half]), max(sizes[half:])
    rows.append(["max, turns 1-" + str(half), f"{first:,}"])
    rows.append([f"max, turns {half + 1}-{turns}", f"{second:,}"])
    late = Sample("late", [float(x) for x in sizes[half:]])
    body = table(["after turn", "persisted session record, bytes"], rows)
    bounded = second <= first * (1 + SLACK)
    verdicts = [
        "context + summary within the configured budget after every turn: "
        + ("met" if not over else verdict(False, f"{len(over)} turns over, first {over[0]}")),
        f"summary ≤ summary_max_chars ({COMPRESSION.summary_max_chars:,}): longest {summary_max:,} — "
        + verdict(summary_max <= COMPRESSION.summary_max_chars, "the cap was not applied"),
        f"record stops growing (second-half max within {SLACK:.0%} of first-half max): "
        f"{second:,} vs {first:,} bytes — " + verdict(bounded, "the state keeps growing"),
    ]
    intro = (
        f"{turns} turns of one session; trigger {COMPRESSION.trigger_tokens:,} tokens, keep "
        f"{COMPRESSION.keep_recent_tokens:,}, summary cap {COMPRESSION.summary_max_chars:,} chars. "
        f"Second-half record size: {fmt(late, lambda b: f'{b:,.0f}')} bytes (median ± spread); "
        f"removed messages went to the workspace archive ({archive:,} bytes), not the state."
    )
    return section("State size after long sessions with compression", intro, body, verdicts)
