"""The metrics hooks count failures too: a model error, a tool error result and a failed agent call,
each under its own outcome; with metrics off the hooks return the shared no-op span."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import ModelError
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.tracing import metrics, spans

pytestmark = pytest.mark.anyio
REQUEST = ModelRequest(messages=[])


async def test_failures_are_counted_by_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = metrics.Metrics()
    monkeypatch.setattr(metrics, "METRICS", m)  # a registry of this test's own
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("read_file", {"path": "missing.txt"}, id="c1"),
            ModelError("provider down"),
        ],
        name="flaky",
    )
    agent = HarnessAgent("a", model, workspace=tmp_path / "ws", store=InMemoryStore())
    with pytest.raises(ModelError):
        await agent.call("go", RuntimeContext(session_id="s"))
    assert m.model_calls.get("", "flaky", "ok") == 1
    assert m.model_calls.get("", "flaky", "error") == 1
    assert sum(m.model_seconds.values[("", "flaky")][0]) == 2
    assert m.tool_calls.get("read_file", "tool_error") == 1
    assert m.agent_calls.get("agent", "error") == 1
    assert m.agent_calls_running.get("agent") == 0


def test_hooks_are_the_shared_no_op_with_metrics_and_tracing_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(metrics, "METRICS", None)
    model = ScriptedModel(["x"], name="m")
    assert spans.chat(model, "a", REQUEST) is spans.NO_SPAN
    assert spans.execute_tool("t", "c1") is spans.NO_SPAN
    assert spans.invoke_agent("a", session_id="s") is spans.NO_SPAN
    monkeypatch.setattr(metrics, "METRICS", metrics.Metrics())
    assert isinstance(spans.chat(model, "a", REQUEST), spans.MeteredChat)
    assert isinstance(spans.invoke_agent("a", session_id="s"), spans.MeteredAgent)


def test_an_agent_call_is_counted_by_kind_and_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``invoke_agent`` hook with metrics on: running while inside, its kind current there,
    then counted ok, error or cancelled (a BaseException that is not an Exception)."""
    m = metrics.Metrics()
    monkeypatch.setattr(metrics, "METRICS", m)
    with spans.invoke_agent("a", session_id="s", depth=1):
        assert spans.AGENT_KIND.get() == "subagent"
        assert m.agent_calls_running.get("subagent") == 1
    with pytest.raises(ValueError), spans.invoke_agent("a", session_id="s"):
        assert spans.AGENT_KIND.get() == "agent"
        raise ValueError("failed")
    with pytest.raises(asyncio.CancelledError), spans.invoke_agent("a", session_id="s"):
        raise asyncio.CancelledError
    assert spans.AGENT_KIND.get() == "agent"
    assert m.agent_calls.get("subagent", "ok") == 1
    assert m.agent_calls.get("agent", "error") == 1
    assert m.agent_calls.get("agent", "cancelled") == 1
    assert m.agent_calls_running.get("subagent") == m.agent_calls_running.get("agent") == 0
