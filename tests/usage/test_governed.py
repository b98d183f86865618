"""Budgets as a user sets them: on HarnessAgent, in a spec, on a team, with prices and estimates."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from agentscope_teams import (
    Budget,
    BudgetExceededError,
    ConfigurationError,
    HarnessAgent,
    RateLimit,
    RuntimeContext,
)
from agentscope_teams.message import TextBlock, UserMsg
from agentscope_teams.model.anthropic import AnthropicChatModel
from agentscope_teams.model.base import ModelRequest, ModelResponse, Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.subagents.spec import SubagentSpec
from agentscope_teams.teams import LocalTeamClient
from agentscope_teams.teams.member.usage import team_budgets, tell_lead
from agentscope_teams.usage import Price, UsageGovernor, flush, split_model_limits
from agentscope_teams.usage.backend import usage_backend
from agentscope_teams.usage.governor import model_call


def _answer(usage: Usage) -> ScriptedModel:
    def reply(request: ModelRequest) -> ModelResponse:
        return ModelResponse(content=[TextBlock(text="ok")], usage=usage)

    return ScriptedModel(reply)


async def test_a_session_budget_stops_the_agent_with_the_budget_named(tmp_path: Path) -> None:
    store = InMemoryStore()
    model = _answer(Usage(input_tokens=300, output_tokens=100))
    agent = HarnessAgent(
        "a", model, store=store, workspace=tmp_path, budget=Budget(max_tokens=1000),
        builtin_tools=False,
    )  # fmt: skip
    ctx = RuntimeContext(session_id="s1", user_id="u", org_id="o")
    for _ in range(3):
        await agent.call("go", ctx)
    with pytest.raises(BudgetExceededError) as caught:
        await agent.call("go", ctx)
    assert caught.value.budget == "session:o/u/s1"
    assert (caught.value.unit, caught.value.limit, caught.value.used) == ("tokens", 1000, 1200)
    assert caught.value.over == 200
    assert len(model.requests) == 3  # the refused call was never sent
    # another session has a budget of its own
    await agent.call("go", RuntimeContext(session_id="s2", user_id="u", org_id="o"))


async def test_cost_comes_from_the_price_override_and_a_dollar_budget_holds(
    tmp_path: Path,
) -> None:
    store = InMemoryStore()
    prices = {"scripted": Price(input_per_mtok=1000.0, output_per_mtok=2000.0)}
    gov = UsageGovernor(store, budgets={"user": Budget(max_usd=1.0)}, prices=prices)
    model = _answer(Usage(input_tokens=300, output_tokens=100))  # $0.30 + $0.20
    agent = HarnessAgent("a", model, store=store, workspace=tmp_path, usage=gov)
    ctx = RuntimeContext(session_id="s1", user_id="u")
    await agent.call("go", ctx)
    state = await agent.get_agent_state(ctx)
    assert state.context[-1].metadata["cost_usd"] == pytest.approx(0.5)
    await agent.call("go", ctx)
    with pytest.raises(BudgetExceededError) as caught:
        await agent.call("go", ctx)
    assert (caught.value.budget, caught.value.unit) == ("user:/u", "usd")
    assert caught.value.used == pytest.approx(1.0)


async def test_a_dollar_budget_on_a_model_without_a_price_says_how_to_set_one(
    tmp_path: Path,
) -> None:
    agent = HarnessAgent(
        "a", _answer(Usage()), store=InMemoryStore(), workspace=tmp_path,
        budget=Budget(max_usd=5.0),
    )  # fmt: skip
    with pytest.raises(ConfigurationError, match="no price is known for model 'scripted'"):
        await agent.call("go", RuntimeContext(session_id="s1"))


async def test_usage_the_provider_did_not_report_is_estimated_and_marked(tmp_path: Path) -> None:
    agent = HarnessAgent(
        "a", _answer(Usage()), store=InMemoryStore(), workspace=tmp_path,
        budget=Budget(max_tokens=10**6), builtin_tools=False,
    )  # fmt: skip
    ctx = RuntimeContext(session_id="s1")
    await agent.call("go", ctx)
    answer = (await agent.get_agent_state(ctx)).context[-1]
    assert answer.metadata["usage_estimated"] is True
    assert "usage_estimated" not in (await agent.get_agent_state(ctx)).context[0].metadata


def test_rate_limits_are_read_from_a_model_string_and_refuse_bad_keys() -> None:
    name, limit = split_model_limits("openai:gpt-4o?rpm=60&tpm=90000&concurrent=4")
    assert name == "openai:gpt-4o"
    assert limit == RateLimit(requests_per_minute=60, tokens_per_minute=90000, concurrent=4)
    assert split_model_limits("openai:gpt-4o") == ("openai:gpt-4o", None)
    with pytest.raises(ConfigurationError, match="the keys are rpm, tpm, concurrent"):
        RateLimit.parse("rpn=60")
    with pytest.raises(ConfigurationError, match="requests_per_minute"):
        RateLimit.parse("rpm=-1")


def test_a_spec_reads_max_tokens_and_max_budget_usd(tmp_path: Path) -> None:
    path = tmp_path / "explorer.md"
    path.write_text(
        "---\nname: explorer\ndescription: looks\nmaxTokens: 5000\nmaxBudgetUsd: 0.25\n---\nLook.\n"
    )
    spec = SubagentSpec.from_file(path)
    assert (spec.max_tokens, spec.max_budget_usd) == (5000, 0.25)


async def test_a_team_budget_is_shared_by_members_and_the_lead_reads_who_stopped(
    ctx: RuntimeContext,
) -> None:
    store = InMemoryStore()
    client = LocalTeamClient(store, ctx)
    team = await client.create_team("t", lead="lead", max_tokens=700)
    alice = await client.spawn_member(team.id, "alice", "", max_tokens=10**6)
    bob = await client.spawn_member(team.id, "bob", "")
    team = await client.get_team(team.id)
    assert (team.max_tokens, team.member("alice").max_tokens) == (700, 10**6)  # type: ignore[union-attr]
    model = _answer(Usage(input_tokens=200, output_tokens=100))
    agent = HarnessAgent("m", model, store=store, workspace=Path("/tmp"), builtin_tools=False)
    member_ctx = ctx.with_session("m1")
    with team_budgets(team, alice, store):
        await agent.call("go", member_ctx)
        await agent.call("go", member_ctx)
    with team_budgets(team, bob, store):
        await agent.call("go", member_ctx)  # 600 of 700 used: bob's call is admitted
        with pytest.raises(BudgetExceededError) as caught:
            await agent.call("go", member_ctx)
    assert caught.value.budget == f"team:{team.id}"
    await tell_lead(client, team, bob, caught.value)
    [note] = await client.unread(team.id, "lead")
    assert note.content.startswith(f"[budget] bob stopped: budget team:{team.id} is spent")


@pytest.mark.parametrize("kind", ["user", "session"])
async def test_ids_with_a_slash_never_share_another_tenants_budget(
    tmp_path: Path, kind: str
) -> None:
    """Org ``acme/x`` user ``bob`` and org ``acme`` user ``x/bob`` are two users of two orgs (ids
    may hold ``/``): one spending its user (or session) budget does not stop the other."""
    store = InMemoryStore()
    gov = UsageGovernor(store, budgets={kind: Budget(max_tokens=100)})
    agent = HarnessAgent(
        "a", _answer(Usage(input_tokens=300, output_tokens=100)), store=store,
        workspace=tmp_path, usage=gov, builtin_tools=False,
    )  # fmt: skip
    first = RuntimeContext(session_id="s", user_id="bob", org_id="acme/x")
    other = RuntimeContext(session_id="s", user_id="x/bob", org_id="acme")
    await agent.call("go", first)
    with pytest.raises(BudgetExceededError):
        await agent.call("go", first)  # spent
    await agent.call("go", other)  # a budget of its own
    assert gov.context_budgets(first)[0][0] != gov.context_budgets(other)[0][0]
    plain = RuntimeContext(session_id="s1", user_id="u", org_id="o")
    assert [n for n, _ in gov.context_budgets(plain)] == [
        f"{kind}:o/u" + "/s1" * (kind == "session")
    ]


async def test_a_call_reserves_the_output_its_model_may_send_without_max_tokens() -> None:
    """An Anthropic model made with ``max_tokens=32000`` answers a request that sets none with up
    to 32,000 tokens: its call reserves that much, not the governor's 4,096 (else calls in flight
    each hold too little and a budget is overshot by several calls, not at most one)."""

    store = InMemoryStore()
    gov = UsageGovernor(store, budgets={"session": Budget(max_tokens=10**6)})
    ctx = RuntimeContext(session_id="s1", user_id="u", org_id="o")
    model = AnthropicChatModel(
        "claude-x", api_key="k", base_url="http://127.0.0.1:9", max_tokens=32000
    )
    request = ModelRequest(system_prompt="", messages=[UserMsg("hi")])
    async with model:
        with gov.bind(ctx):
            async with model_call(model, request):
                doc = await usage_backend(store).read("session:o/u/s1")
    assert doc is not None and doc["rt"] >= 32000, doc


async def test_a_call_cancelled_in_flight_counts_its_prompt(tmp_path: Path) -> None:
    """A call cancelled while its request is with the provider (a timeout around the agent, a
    stop) has had its prompt read and billed: its estimated input is counted on the budget and
    its reservation released, so cancelling calls does not spend outside the budget."""
    store = InMemoryStore()
    began = anyio.Event()

    async def reply(request: ModelRequest) -> ModelResponse:
        began.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    agent = HarnessAgent(
        "a", ScriptedModel(reply), store=store, workspace=tmp_path,
        budget=Budget(max_tokens=10**6), builtin_tools=False,
    )  # fmt: skip
    ctx = RuntimeContext(session_id="s1", user_id="u", org_id="o")
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.call, "go", ctx)
        await began.wait()
        tg.cancel_scope.cancel()
    await flush(store)
    doc = await usage_backend(store).read("session:o/u/s1")
    assert doc is not None
    assert doc["rt"] == 0 and doc["ut"] > 0, doc
