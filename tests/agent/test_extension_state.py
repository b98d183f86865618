"""Typed extension state inside AgentState: old layouts load, newer versions are refused, changes
through ``of`` are saved with the state and ``peek`` changes nothing."""

from __future__ import annotations

import pytest

from agentscope_teams.errors import SchemaVersionError
from agentscope_teams.state import AgentState
from agentscope_teams.subagents.memo import SubagentMemo
from agentscope_teams.teams.lead.state import TeamLeadState


def test_a_lead_state_written_before_schema_1_loads_and_is_rewritten() -> None:
    old = AgentState.model_validate_json(
        '{"session_id": "s", "middle_context": {"team_id": "t-1"}}'
    )
    assert TeamLeadState.peek(old).team_id == "t-1"
    assert old.middle_context == {"team_id": "t-1"}  # peek changes nothing

    TeamLeadState.of(old).team_id = "t-2"
    saved = AgentState.model_validate_json(old.model_dump_json())
    assert saved.middle_context == {"teams": {"schema_version": 1, "team_id": "t-2"}}
    assert TeamLeadState.peek(saved).team_id == "t-2"


def test_a_subagent_memo_without_schema_version_loads() -> None:
    raw = '{"middle_context": {"subagents": {"watch": ["r-1"], "delivered": []}}}'
    memo = SubagentMemo.of(AgentState.model_validate_json(raw))
    assert memo.watch == ["r-1"] and memo.schema_version == 1


def test_a_newer_extension_state_is_refused_with_an_upgrade_hint() -> None:
    raw = '{"middle_context": {"subagents": {"schema_version": 2, "watch": []}}}'
    with pytest.raises(SchemaVersionError, match="upgrade"):
        SubagentMemo.peek(AgentState.model_validate_json(raw))


def test_extension_states_keep_each_other_and_foreign_keys() -> None:
    state = AgentState(middle_context={"mine": {"x": 1}})
    SubagentMemo.of(state).add_watch("r-9")
    TeamLeadState.of(state).team_id = "team-1"
    saved = AgentState.model_validate_json(state.model_dump_json())
    assert saved.middle_context["mine"] == {"x": 1}
    assert SubagentMemo.peek(saved).watch == ["r-9"]
    assert TeamLeadState.peek(saved).team_id == "team-1"


def test_call_scope_locals_are_one_object_per_owner_and_kind(tmp_path: object) -> None:
    from dataclasses import dataclass
    from pathlib import Path

    from agentscope_teams.agent.extension import CallScope, ReadMark
    from agentscope_teams.context import RuntimeContext
    from agentscope_teams.tools import ToolEnv

    @dataclass
    class Seen:
        n: int = 0

    assert isinstance(tmp_path, Path)
    scope = CallScope(
        agent=None,  # type: ignore[arg-type]  # locals do not need the agent
        ctx=RuntimeContext(session_id="s"),
        state=AgentState(),
        env=ToolEnv(workspace=tmp_path),
    )
    a, b = object(), object()
    scope.local(a, Seen).n += 1
    scope.local(a, Seen).n += 1
    assert scope.local(a, Seen).n == 2 and scope.local(b, Seen).n == 0
    mark = scope.local(a, ReadMark)
    mark.read = 5
    assert mark.to_acknowledge() == 5
    mark.acked = 5
    assert scope.local(a, ReadMark).to_acknowledge() is None
