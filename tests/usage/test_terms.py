"""What a governor works out once instead of per model call: a model's rate limit, limiter key and
rates (:meth:`UsageGovernor.terms`), a scope's budget limits; and the ``with`` blocks of
``bind``, ``add_budget`` and ``tenant``, which take the scope in force when they are entered."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_teams import RuntimeContext
from agentscope_teams.agent.config import ReActConfig
from agentscope_teams.agent.react import ReActAgent
from agentscope_teams.message import TextBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse, Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.state import AgentState
from agentscope_teams.store import InMemoryStore
from agentscope_teams.usage import Budget, RateLimit, UsageGovernor, add_budget, tenant
from agentscope_teams.usage.governor import current_scope

pytestmark = pytest.mark.anyio


class KeyedModel(ScriptedModel):
    """A scripted model with an API key whose fingerprint counts how often it is read."""

    provider = "openai"
    reads = 0

    @property
    def key_fingerprint(self) -> str:
        type(self).reads += 1
        return "f00d"


def _reply(request: ModelRequest) -> ModelResponse:
    return ModelResponse(
        content=[TextBlock(text="ok")], usage=Usage(input_tokens=5, output_tokens=2)
    )


async def test_a_models_limiter_key_is_worked_out_once_for_many_calls() -> None:
    store = InMemoryStore()
    limit = RateLimit(requests_per_minute=6000, burst=100)
    gov = UsageGovernor(store, rate_limit=limit, budgets={"session": Budget(max_tokens=10**6)})
    model = KeyedModel(_reply)
    agent = ReActAgent("a", model, config=ReActConfig(stream_model=False))
    KeyedModel.reads = 0
    for _ in range(5):
        with gov.bind(RuntimeContext(session_id="s")):
            await agent.reply("hi", AgentState(session_id="s"))
    assert KeyedModel.reads == 1
    terms = gov.terms(model)
    assert terms.key == f"openai|{model.model_name}|f00d"
    assert terms.limit is limit
    assert terms.rates.rpm == pytest.approx(6000 * (1 - limit.margin))
    doc = await gov.backend.read("session://s")
    assert doc is not None and doc["ut"] == 5 * 7  # every call counted


def test_a_governors_rate_limits_cannot_change_under_it() -> None:
    gov = UsageGovernor(InMemoryStore(), rate_limit=RateLimit(requests_per_minute=60))
    with pytest.raises(TypeError):
        gov.rate_limits["gpt-4o"] = RateLimit(requests_per_minute=1)  # type: ignore[index]
    assert set(gov.rate_limits) == {"*"}


def test_the_scope_blocks_take_the_scope_in_force_when_entered() -> None:
    gov = UsageGovernor(InMemoryStore())
    team, member = Budget(max_tokens=100), Budget(max_tokens=10)
    outer_budget = add_budget("team:t1", team)  # made outside any bound governor
    team_tenant = tenant("team:t1")
    assert current_scope() is None
    with gov.bind(RuntimeContext(session_id="s")), outer_budget, team_tenant:
        scope: Any = current_scope()
        assert scope.governor is gov
        assert scope.budgets == (("team:t1", team),)
        assert scope.tenant == "team:t1"
        assert [limit.name for limit in scope.limits] == ["team:t1"]
        with add_budget("member:t1/a", member):
            inner: Any = current_scope()
            assert [n for n, _ in inner.budgets] == ["team:t1", "member:t1/a"]
            assert inner.pending is scope.pending  # the same call's settles
        assert current_scope() is scope
    assert current_scope() is None


def test_a_scope_without_a_governor_or_a_budget_changes_nothing() -> None:
    with (
        add_budget("team:t1", None),
        tenant("team:t1"),
        add_budget("team:t2", Budget(max_tokens=1)),
    ):
        assert current_scope() is None


def test_tool_schemas_are_measured_once_as_their_json_list(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from agentscope_teams.model.base import ToolSchema
    from agentscope_teams.usage import estimate

    schemas = [
        ToolSchema(name=f"t{i}", description="é" * i, parameters={"type": "object"})
        for i in range(4)
    ]
    for n in range(len(schemas) + 1):
        expected = len(json.dumps([s.model_dump() for s in schemas[:n]])) if n else 0
        assert estimate.tool_chars(schemas[:n]) == expected
    dumps = 0
    real = json.dumps

    def counted(*args: Any, **kwargs: Any) -> str:
        nonlocal dumps
        dumps += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(json, "dumps", counted)
    for _ in range(3):
        estimate.tool_chars(schemas)
    assert dumps == 0  # every schema was measured above


def test_the_scope_blocks_still_decorate_functions() -> None:
    gov = UsageGovernor(InMemoryStore())
    seen: list[Any] = []

    @tenant("team:t9")
    def inside() -> None:
        seen.append(current_scope())

    with gov.bind():
        inside()
        inside()
    assert [s.tenant for s in seen] == ["team:t9", "team:t9"]
    assert current_scope() is None
