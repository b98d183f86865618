"""HarnessAgent's options are checked when it is built: a misspelled option, a value of the wrong
type or out of range fails at construction with an error naming the option, never at the first run."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent, OptionError, ScriptedModel, SubagentSpec
from agentscope_teams.agent import SessionAgent
from agentscope_teams.agent.options import SessionOptions
from agentscope_teams.compose import HarnessOptions
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.store import InMemoryStore
from agentscope_teams.subagents import SubagentExtension
from agentscope_teams.subagents.options import SubagentOptions

SPECS = [SubagentSpec(name="rev", description="Reviews", system_prompt="Review.")]


def build(tmp_path: Path, **options: Any) -> HarnessAgent:
    """The options are untyped here: the tests pass wrong ones on purpose."""
    return HarnessAgent(
        "lead", ScriptedModel(["done"]), workspace=tmp_path, store=InMemoryStore(), **options
    )


def test_a_misspelled_option_fails_at_construction_naming_the_close_match(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="no option 'max_dpeth'; did you mean 'max_depth'") as exc:
        build(tmp_path, specs=SPECS, max_dpeth=3)
    assert (exc.value.option, exc.value.suggestion) == ("max_dpeth", "max_depth")
    assert isinstance(exc.value, TypeError)  # what Python raises for an unexpected keyword
    with pytest.raises(OptionError, match="'busy_timeout'"):
        build(tmp_path, busy_timout=3)
    with pytest.raises(OptionError, match="no option 'colour'; it takes ") as far:
        build(tmp_path, colour="red")
    assert far.value.suggestion is None


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("max_depth", "3", "must be int, got str '3'"),
        ("max_concurrent", True, "must be int"),
        ("lease_ttl", "30", "must be float"),
        ("workspace_scope", "global", "must be 'session' or 'shared'"),
        ("mcp_tools", "mcp__git", "must be Sequence"),
        ("models", {"rev": "openai:gpt-4o"}, "must be Mapping"),
        ("tools", "read_file", "must be Iterable"),
    ],
)
def test_a_value_of_the_wrong_type_fails_at_construction(
    tmp_path: Path, option: str, value: object, expected: str
) -> None:
    with pytest.raises(OptionError, match=expected) as exc:
        build(tmp_path, specs=SPECS, **{option: value})
    assert exc.value.option == option


def test_limits_out_of_range_fail_with_or_without_specs(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="max_depth must be >= 1, got -1"):
        build(tmp_path, max_depth=-1)
    with pytest.raises(ConfigurationError, match="max_concurrent must be >= 1, got 0"):
        build(tmp_path, specs=SPECS, max_concurrent=0)
    with pytest.raises(ConfigurationError, match=r"\['max_depth'\] need specs="):
        build(tmp_path, max_depth=3)


def test_options_passed_on_are_checked_against_their_receiver(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"team_options has no option 'task_leas'.*'task_lease'"):
        build(tmp_path, specs=SPECS, team_options={"task_leas": 30})
    with pytest.raises(OptionError, match=r"mcp_options has no option 'max_lve'.*'max_live'"):
        build(tmp_path, mcp_options={"max_lve": 2})


def test_the_old_keywords_and_a_group_passed_whole_build_the_same_agent(tmp_path: Path) -> None:
    group: SubagentOptions = {"max_depth": 3, "max_concurrent": 1}
    for agent in (
        build(tmp_path, specs=SPECS, max_depth=3, max_concurrent=1),
        build(tmp_path, specs=SPECS, **group),
    ):
        [sub] = [e for e in agent.extensions if isinstance(e, SubagentExtension)]
        assert (sub.max_depth, sub.max_concurrent) == (3, 1)


def test_the_option_groups_declare_every_keyword_of_session_agent() -> None:
    """HarnessAgent passes SessionAgent's options on: a keyword added there is declared here."""
    params = inspect.signature(SessionAgent.__init__).parameters.values()
    keywords = {p.name for p in params if p.kind is p.KEYWORD_ONLY}
    assert keywords == set(SessionOptions.__annotations__)
    assert set(SessionOptions.__annotations__) <= set(HarnessOptions.__annotations__)
    assert set(SubagentOptions.__annotations__) <= set(HarnessOptions.__annotations__)
