"""Tool calls refused before they run are counted by tool and source: a PreToolUse hook that
blocks, and a permission rule that denies; an allowed call is not counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams.agent.react import ReActAgent
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelResponse
from agentscope_teams.state import AgentState, PermissionRule
from agentscope_teams.tools import PermissionEngine, Toolkit, tool
from agentscope_teams.tracing import metrics

from ..hooks.helpers import CTX, agent, command_hooks
from ..hooks.test_tool_hooks import WRITE, _blocking_script

pytestmark = pytest.mark.anyio


@pytest.fixture
def m(monkeypatch: pytest.MonkeyPatch) -> metrics.Metrics:
    fresh = metrics.Metrics()
    monkeypatch.setattr(metrics, "METRICS", fresh)  # a registry of this test's own
    return fresh


async def test_a_blocking_hook_is_counted_as_a_hook_denial(
    tmp_path: Path, m: metrics.Metrics
) -> None:
    model = ScriptedModel([WRITE, "done"])
    hooks = command_hooks("PreToolUse", _blocking_script(tmp_path), "Write|Edit")
    async with agent(tmp_path, model, hooks=hooks) as a:
        await a.call("write it", CTX)
    assert m.tool_denials.values == {("write_file", "hook"): 1.0}
    assert not (tmp_path / "ws" / "a.txt").exists()


async def test_a_denying_rule_is_counted_and_an_allowed_call_is_not(m: metrics.Metrics) -> None:
    @tool
    async def echo(text: str) -> str:
        """Echo.

        Args:
            text: what
        """
        return text

    engine = PermissionEngine([PermissionRule(tool="echo", behavior="deny", pattern="no*")])
    calls: list[ModelResponse | str] = [
        ScriptedModel.tool_call("echo", {"text": "nope"}, id="d1"),
        ScriptedModel.tool_call("echo", {"text": "yes"}, id="d2"),
        "ok",
    ]
    agent = ReActAgent("bot", ScriptedModel(calls), "", Toolkit([echo]), permissions=engine)
    await agent.reply("go", AgentState(session_id="s"))
    assert m.tool_denials.values == {("echo", "permission"): 1.0}
