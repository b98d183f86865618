"""Token accounting: reported usage in the state and events, a CJK-aware estimate, and compression
budgets that start from what the model reported."""

from __future__ import annotations

from pathlib import Path

from agentscope_teams import HarnessAgent
from agentscope_teams.agent import CompressionConfig, ReActConfig
from agentscope_teams.agent import compression as comp
from agentscope_teams.context import RuntimeContext
from agentscope_teams.events import ModelCallEndEvent
from agentscope_teams.message import AssistantMsg, UserMsg
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelRequest, ModelResponse, Usage
from agentscope_teams.state import AgentState
from agentscope_teams.store import InMemoryStore

CTX = RuntimeContext(session_id="u", user_id="alice")
#: 400 Chinese characters: a code review remark, repeated.
CHINESE = ("这个函数在循环里重复查询数据库应该把查询移到循环外面并且加上缓存" * 20)[:400]


def summarizing(answer: ModelResponse | str) -> ScriptedModel:
    """Answers ``answer``; compression requests get a short summary (and are counted)."""

    def brain(req: ModelRequest) -> ModelResponse | str:
        if req.metadata.get("purpose") == "compression":
            return "summary of earlier talk"
        return answer

    return ScriptedModel(brain)


def agent(tmp_path: Path, model: ScriptedModel, trigger: int) -> HarnessAgent:
    cc = CompressionConfig(trigger_tokens=trigger, keep_recent_tokens=0)
    return HarnessAgent(
        "a", model, workspace=tmp_path, store=InMemoryStore(), config=ReActConfig(compression=cc)
    )


def compressions(model: ScriptedModel) -> int:
    return sum(1 for r in model.requests if r.metadata.get("purpose") == "compression")


def test_chinese_text_counts_about_one_token_per_character() -> None:
    english = "The function queries the database inside the loop; move it out. " * 6
    assert len(CHINESE) == 400
    assert 380 <= comp.text_tokens(CHINESE) <= 420  # characters / 4 said 100
    assert comp.text_tokens(english) == len(english) / 4
    mixed = "请检查 app.py 第 42 行"  # 5 CJK characters and 12 ASCII ones
    assert comp.text_tokens(mixed) == 5 + 12 / 4
    assert comp.estimate_tokens(UserMsg(CHINESE)) >= 380
    assert 100 <= comp.estimate_tokens(UserMsg(english)) <= 110


async def test_a_chinese_conversation_is_compressed_when_its_tokens_pass_the_trigger(
    tmp_path: Path,
) -> None:
    model = summarizing("好的")
    chinese = agent(tmp_path, model, trigger=1_000)
    for _ in range(2):  # two 400-character Chinese messages: about 820 tokens
        await chinese.call(CHINESE, CTX)
    assert compressions(model) == 0
    await chinese.call(CHINESE, CTX)  # ~1,230 tokens; by characters / 4 it was ~310
    assert compressions(model) == 1
    state = await chinese.get_agent_state(CTX)
    assert state.summary == "summary of earlier talk"


async def test_reported_usage_is_kept_in_the_state_and_the_events(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ScriptedModel.tool_call(
                "glob_files", {"pattern": "*"}, usage=Usage(input_tokens=120, output_tokens=8)
            ),
            ScriptedModel.text("done", usage=Usage(input_tokens=150, output_tokens=4)),
        ]
    )
    a = agent(tmp_path, model, trigger=10_000)
    events = [e async for e in a.stream("look", CTX)]
    ends = [e.usage for e in events if isinstance(e, ModelCallEndEvent)]
    assert ends == [
        Usage(input_tokens=120, output_tokens=8),
        Usage(input_tokens=150, output_tokens=4),
    ]
    usage = (await a.get_agent_state(CTX)).usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (270, 12, 2)
    assert usage.prompt_tokens == 154
    state = await a.get_agent_state(CTX)
    assert usage.prompt_messages == len(state.context)
    assert usage.prompt_last_id == state.context[-1].id


async def test_compression_starts_from_the_reported_prompt_size(tmp_path: Path) -> None:
    """Short English text, but the model reports a 5,000-token prompt (a long system prompt and
    tool schemas count too): the next call compresses although the estimate is tiny."""
    big = ScriptedModel.text("ok", usage=Usage(input_tokens=5_000, output_tokens=2))
    model = summarizing(big)
    a = agent(tmp_path, model, trigger=1_000)
    await a.call("first", CTX)
    assert compressions(model) == 0
    state = await a.get_agent_state(CTX)
    assert comp.TokenCounter().total(state.context) < 100
    assert comp.TokenCounter().total(state.context, state.usage) > 5_000
    await a.call("second", CTX)
    assert compressions(model) == 1
    after = await a.get_agent_state(CTX)
    assert after.usage.requests == 2  # the summary request is not the conversation's


def test_the_counter_estimates_only_what_came_after_the_reported_response() -> None:
    state = AgentState(session_id="x")
    state.context += [UserMsg("question"), AssistantMsg("answer")]
    state.usage.record(1_000, 10, state.context)
    state.context.append(UserMsg(CHINESE))
    counter = comp.TokenCounter()
    assert counter.total(state.context, state.usage) == 1_010 + comp.estimate_tokens(
        state.context[-1]
    )
    state.context[1] = AssistantMsg("rewritten")  # the anchor message changed: estimate it all
    assert counter.total(state.context, state.usage) == counter.total(state.context)
    state.clear_context()
    assert state.usage.prompt_tokens == 0 and state.usage.input_tokens == 1_000


def test_a_state_saved_before_usage_was_recorded_still_loads() -> None:
    old = '{"schema_version": 1, "session_id": "s", "context": [], "reply_id": "r", "cur_iter": 2}'
    state = AgentState.model_validate_json(old)
    assert state.usage.requests == 0 and state.pause_trace is None


async def test_a_model_without_usage_anchors_an_estimate_so_later_calls_estimate_only_new_messages(
    tmp_path: Path,
) -> None:
    """The model reports no usage: the ledger keeps an estimate anchored at the last answer, so
    the next call's budget estimates only the messages after it, not the whole session again."""
    a = agent(tmp_path, ScriptedModel(["first answer", "second answer"]), trigger=10_000)
    await a.call("first", CTX)
    state = await a.get_agent_state(CTX)
    whole = comp.TokenCounter().total(state.context)
    assert state.usage.input_tokens == 0  # nothing was reported
    assert (state.usage.prompt_tokens, state.usage.anchor(state.context)) == (whole, 2)
    await a.call("second", CTX)
    state = await a.get_agent_state(CTX)
    assert state.usage.anchor(state.context) == 4
    assert state.usage.prompt_tokens == comp.TokenCounter().total(state.context)
