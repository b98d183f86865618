"""``model: fable`` is one of Claude Code's model aliases (the tier above ``opus``, chosen with
``ANTHROPIC_DEFAULT_FABLE_MODEL``): an agent file naming it loads and runs here as ``opus`` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams.model import ScriptedModel, model_from_string
from agentscope_teams.model.anthropic import AnthropicChatModel
from agentscope_teams.subagents import load_specs
from agentscope_teams.subagents.spawn import ModelPool
from agentscope_teams.subagents.strict import strict_problems


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "planner.md").write_text(
        "---\nname: planner\ndescription: Plans long work.\nmodel: fable\n---\nYou plan.\n"
    )
    return folder


def test_strict_check_accepts_fable(agents: Path) -> None:
    result = load_specs(agents, strict=False, strict_yaml=True)
    assert result.specs["planner"].model == "fable"
    assert [str(e) for e in strict_problems(result, [])] == []


def test_fable_builds_the_claude_model_of_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.delenv("ANTHROPIC_DEFAULT_FABLE_MODEL", raising=False)
    built = model_from_string("fable")
    assert isinstance(built, AnthropicChatModel) and built.model_name == "claude-fable-5-2"
    monkeypatch.setenv("ANTHROPIC_DEFAULT_FABLE_MODEL", "claude-fable-5")
    assert model_from_string("fable").model_name == "claude-fable-5"


def test_without_a_key_a_fable_spec_runs_on_the_parents_model(
    agents: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    parent = ScriptedModel(["hi"])
    spec = load_specs(agents).specs["planner"]
    assert ModelPool(parent).for_spec(spec) is parent
