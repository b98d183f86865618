"""Budget use and rate-limit waits in the process's Prometheus metrics, with bounded labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams import Budget, BudgetExceededError, HarnessAgent, RateLimit, RuntimeContext
from agentscope_teams.message import TextBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse, Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.tracing import metrics
from agentscope_teams.usage import UsageGovernor


async def test_budget_use_refusals_and_waits_are_counted_by_scope_and_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = metrics.Metrics()
    monkeypatch.setattr(metrics, "METRICS", m)

    def reply(request: ModelRequest) -> ModelResponse:
        return ModelResponse(
            content=[TextBlock(text="ok")], usage=Usage(input_tokens=60, output_tokens=40)
        )

    gov = UsageGovernor(
        InMemoryStore(),
        budgets={"session": Budget(max_tokens=250)},
        rate_limit=RateLimit(requests_per_minute=600, margin=0.0),  # 100 ms apart
    )
    agent = HarnessAgent(
        "a", ScriptedModel(reply), store=InMemoryStore(), workspace=tmp_path, usage=gov
    )
    ctx = RuntimeContext(session_id="secret-session-id", user_id="u")
    for _ in range(3):
        await agent.call("go", ctx)
    with pytest.raises(BudgetExceededError):
        await agent.call("go", ctx)
    assert m.budget_tokens.get("session") == 300
    assert m.budget_refusals.get("session", "tokens") == 1
    counts, _ = m.ratelimit_wait.values[("", "scripted")]
    assert sum(counts) == 3  # every call sent took a turn; the refused one took none
    text = m.render()
    assert 'agentscope_teams_budget_tokens_total{scope="session"} 300' in text
    assert "secret-session-id" not in text
