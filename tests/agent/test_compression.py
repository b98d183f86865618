"""Context compression: bounded state, nothing lost (archive), tool calls never split from results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.agent import CompressionConfig, ReActAgent, ReActConfig
from agentscope_teams.agent import compression as comp
from agentscope_teams.agent.react import ReplyOptions
from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import (
    AssistantMsg,
    Block,
    Msg,
    ToolResultBlock,
    ToolUseBlock,
    UserMsg,
)
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelRequest, ModelResponse, Usage
from agentscope_teams.state import AgentState
from agentscope_teams.store import InMemoryStore
from agentscope_teams.tools import tool

from .helpers import orphans

CC = CompressionConfig(trigger_tokens=300, keep_recent_tokens=100, summary_max_chars=400)
CTX = RuntimeContext(session_id="long", user_id="alice")
TURNS = 500


async def note(text: str) -> str:
    """Take a note."""
    return f"noted: {text}"


def long_brain(req: ModelRequest) -> ModelResponse | str:
    """Summaries are longer than the cap; every third turn uses a tool."""
    if req.metadata.get("purpose") == "compression":
        return "summary " + "x" * (2 * CC.summary_max_chars)
    last = req.messages[-1]
    if last.tool_results():
        return "done: " + last.tool_results()[0].output
    text = last.get_text_content()
    turn = int(text.split()[1])
    if turn % 3 == 0:
        return ScriptedModel.tool_call("note", {"text": f"fact number {turn}"})
    return f"echo: {text}"


def message_overhead() -> int:
    """JSON bytes of a message beyond its content: id, role, name, timestamp, loop metadata."""
    meta = {"reply_id": "r" * 32, "usage": Usage(input_tokens=10**6).model_dump()}
    return len(AssistantMsg([], name="lead", metadata=meta).model_dump_json())


def state_budget(turn_tokens: int) -> int:
    """What the config allows: the capped summary plus a context of at most trigger + one turn of
    estimated tokens (content <= 4 bytes a token; every message >= 4 tokens and adds overhead)."""
    tokens = CC.trigger_tokens + turn_tokens
    empty = len(AgentState(session_id=CTX.session_id, reply_id="r" * 32).model_dump_json())
    return empty + CC.summary_max_chars + 4 * tokens + (tokens // 4) * message_overhead()


def tokens(msgs: list[Msg]) -> int:
    return sum(map(comp.estimate_tokens, msgs))


async def test_a_long_session_stays_bounded_and_loses_nothing(tmp_path: Path) -> None:
    model = ScriptedModel(long_brain)
    config = ReActConfig(compression=CC, stream_model=False)
    agent = HarnessAgent(
        "lead", model, "sys", workspace=tmp_path, store=InMemoryStore(),
        tools=[tool(note)], builtin_tools=False, config=config,
    )  # fmt: skip
    added = 0
    seen: set[str] = set()
    previous: set[str] = set()
    for turn in range(TURNS):
        await agent.call(UserMsg(f"turn {turn} " + "words " * 8), CTX)
        added += 4 if turn % 3 == 0 else 2
        state = await agent.get_agent_state(CTX)
        new = [m for m in state.context if m.id not in previous]
        assert tokens(state.context) <= CC.trigger_tokens + tokens(new)
        assert len(state.model_dump_json()) <= state_budget(tokens(new)), f"turn {turn}"
        assert len(state.summary) <= CC.summary_max_chars
        assert orphans(state.context) == ([], []), f"split tool call at turn {turn}"
        previous = {m.id for m in state.context}
        seen |= previous
    turns = [r for r in model.requests if r.metadata.get("purpose") != "compression"]
    seen |= {m.id for r in turns for m in r.messages}

    archive_path = comp.workspace_archive_path(agent.workspace_for(CTX), "lead", CTX.session_id)
    archived = [json.loads(line)["id"] for line in archive_path.read_text().splitlines()]
    kept = [m.id for m in state.context]
    assert len(archived) + len(kept) == added
    assert len(set(archived) | set(kept)) == added and seen == set(archived) | set(kept)
    summaries = [r for r in model.requests if r.metadata.get("purpose") == "compression"]
    assert len(summaries) > 10 and "Earlier summary" in summaries[-1].messages[0].get_text_content()
    assert state.summary in model.requests[-1].system_prompt


# -- the cut ------------------------------------------------------------------------------------


def tool_turn(i: int, pad: int = 40) -> list[Msg]:
    use = ToolUseBlock(id=f"t{i}", name="note", input={"text": "y" * pad})
    return [
        UserMsg(f"q{i}"),
        AssistantMsg([use]),
        UserMsg([ToolResultBlock(tool_use_id=f"t{i}", output="z" * pad)], name="tool"),
        AssistantMsg(f"a{i}"),
    ]


@pytest.mark.parametrize("keep", [0, 1, 10, 30, 60, 200])
def test_the_cut_never_separates_a_tool_call_from_its_result(keep: int) -> None:
    context = [m for i in range(6) for m in tool_turn(i)]
    split = comp.choose_split(context, keep)
    assert 0 <= split < len(context)
    assert orphans(context[split:]) == ([], []) and orphans(context[:split]) == ([], [])
    assert tokens(context[split:]) >= min(keep, tokens(context[-1:]))


def test_a_long_running_parallel_step_is_kept_whole() -> None:
    uses: list[Block] = [ToolUseBlock(id=f"p{i}", name="note", input={}) for i in range(3)]
    results = [ToolResultBlock(tool_use_id=f"p{i}", output="r" * 400) for i in range(3)]
    context = [
        UserMsg("start"),
        AssistantMsg(uses),
        *[UserMsg([r], name="tool") for r in results],
        AssistantMsg("end"),
    ]
    # keeping only the last message would cut through the step: the cut falls before it instead
    assert comp.choose_split(context, 1) in (1, 5)
    assert orphans(context[comp.choose_split(context, 1) :]) == ([], [])


async def test_a_failing_summary_or_archive_removes_nothing(tmp_path: Path) -> None:
    def summary_fails(req: ModelRequest) -> str:
        if req.metadata.get("purpose") == "compression":
            raise RuntimeError("summarizer down")
        return "fine"

    cc = CompressionConfig(trigger_tokens=100, keep_recent_tokens=0)
    agent = ReActAgent("bot", ScriptedModel(summary_fails), config=ReActConfig(compression=cc))
    state = AgentState(session_id="s", context=[UserMsg("w" * 800), AssistantMsg("ok")])
    await agent.reply("more", state)
    assert len(state.context) == 4 and state.summary == ""

    async def broken_archive(msgs: list[Msg]) -> None:
        raise OSError("disk full")

    agent = ReActAgent(
        "bot", ScriptedModel(long_brain_no_tools), config=ReActConfig(compression=cc)
    )
    await agent.reply("turn 1", state, ReplyOptions(archiver=broken_archive))
    assert len(state.context) == 6 and state.summary == ""


def long_brain_no_tools(req: ModelRequest) -> str:
    return "a summary" if req.metadata.get("purpose") == "compression" else "fine"


# -- the archive's name -------------------------------------------------------------------------


def test_archive_names_of_long_ids_fit_and_stay_apart(tmp_path: Path) -> None:
    assert comp.workspace_archive_path(tmp_path, "lead", "s1").name == "lead--s1.jsonl"
    assert comp.workspace_archive_path(tmp_path, "lead", "a:b").name == "lead--a%3Ab.jsonl"
    ids = ["a" * 256, "a" * 255 + "b", "\U0001f600" * 63, ":" * 86, "x" * 120]
    names = {
        comp.workspace_archive_path(tmp_path, agent, session).name
        for agent in ("lead", "x" * 200, "y" * 99)
        for session in ids
    }
    assert len(names) == 15 and max(len(n.encode()) for n in names) <= 255
    path = comp.workspace_archive_path(tmp_path, "x" * 200, ":" * 86)
    path.parent.mkdir(parents=True)
    path.write_text("{}")  # the file system takes the name
