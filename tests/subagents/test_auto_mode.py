"""``permissionMode: auto`` (Claude Code's classifier mode) in an agent file: the file loads, as
in Claude Code, and since no classifier decides here the agent runs in its parent's mode; the
load warning says so and ``specs check --strict`` refuses it (a key not acted on)."""

from __future__ import annotations

from pathlib import Path

from agentscope_teams.subagents.spawn import spec_permissions
from agentscope_teams.subagents.spec import SubagentSpec, load_specs
from agentscope_teams.subagents.strict import strict_problems
from agentscope_teams.tools import PermissionEngine
from agentscope_teams.trust import ProjectTrust


def test_an_auto_mode_file_loads_and_runs_in_the_parents_mode(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_text("---\nname: a\ndescription: A.\npermissionMode: auto\n---\nBody.\n")
    spec = SubagentSpec.from_file(path)
    assert spec.permission_mode is None
    assert any("line 4" in w and "'auto'" in w and "parent's mode" in w for w in spec.warnings)
    for parent in ("default", "accept_edits", "plan"):
        engine = spec_permissions(spec, PermissionEngine(mode=parent), ProjectTrust())  # type: ignore[arg-type]
        assert (engine.mode if engine else parent) == parent
    [problem] = strict_problems(load_specs(tmp_path, strict=False))
    assert problem.line == 4 and "'auto'" in str(problem)
