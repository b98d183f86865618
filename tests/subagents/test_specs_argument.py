"""``specs=`` given in code: a mapping whose key is not its spec's name, or an entry that is not
a spec, is a ConfigurationError naming it, not a spawn that later fails or an AttributeError."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, ScriptedModel, SubagentSpec
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.store import InMemoryStore
from agentscope_teams.subagents.pool import specs_from

WRITER = SubagentSpec(name="writer", description="Writes.")


def test_a_mapping_key_that_is_not_the_specs_name_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"'reviewer'.*'writer'"):
        specs_from({"reviewer": WRITER})
    assert specs_from({"writer": WRITER}) == {"writer": WRITER}


@pytest.mark.parametrize("entry", ["agents/", Path("agents/writer.md"), {"name": "x"}])
def test_an_entry_that_is_not_a_spec_is_named(entry: object) -> None:
    with pytest.raises(ConfigurationError, match=r"specs\[1\].*SubagentSpec"):
        specs_from([WRITER, entry])
    with pytest.raises(ConfigurationError, match=r"specs\['x'\].*SubagentSpec"):
        specs_from({"x": entry})


def test_the_agent_refuses_them_when_it_is_built(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="'reviewer'"):
        HarnessAgent(
            "lead",
            ScriptedModel(["x"]),
            specs={"reviewer": WRITER},
            store=InMemoryStore(),
            workspace=tmp_path,
        )
