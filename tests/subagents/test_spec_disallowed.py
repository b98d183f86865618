"""``disallowedTools`` as written in a spec file: a name that matches no tool (a typo such as
``Bassh`` leaves ``bash`` allowed) is a warning with its line, and an error in ``specs check
--strict``; a value of the wrong type is an error naming ``disallowedTools``, not ``tools``."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from agentscope_teams.errors import SpecError
from agentscope_teams.subagents import SubagentSpec, load_specs
from agentscope_teams.subagents.strict import strict_problems


def _write(tmp_path: Path, front: str) -> Path:
    path = tmp_path / "guard.md"
    path.write_text(f"---\nname: guard\ndescription: Guards.\n{front}\n---\nGuard.\n")
    return path


def test_a_disallowed_name_that_matches_no_tool_is_warned_about_on_its_line(
    tmp_path: Path,
) -> None:
    _write(tmp_path, "tools: Read, Bash\ndisallowedTools: Bassh, Write")
    result = load_specs(tmp_path)
    spec = result.specs["guard"]
    assert "write_file" in spec.removed_tools  # the known name still acts
    [warning] = [w for w in result.warnings if "Bassh" in w.message]
    assert warning.line == 5 and "disallowedTools" in warning.message
    [problem] = [p for p in strict_problems(result) if "Bassh" in str(p)]
    assert problem.line == 5 and "disallowedTools" in str(problem)
    assert SubagentSpec(name="g", description="d", disallowed_tools=["Bassh"]).warnings


@pytest.mark.parametrize(
    ("front", "line", "reason"),
    [
        ("disallowedTools: 5", 4, "disallowedTools must be a list of tool names"),
        ("disallowedTools:\n  - Read\n  - 5", 6, "disallowedTools[1] must be a tool name"),
    ],
)
def test_a_disallowed_value_of_the_wrong_type_names_the_field(
    tmp_path: Path, front: str, line: int, reason: str
) -> None:
    with pytest.raises(SpecError) as info:
        SubagentSpec.from_file(_write(tmp_path, front))
    assert info.value.line == line and reason in str(info.value), str(info.value)


def test_in_code_a_disallowed_value_of_the_wrong_type_names_the_field() -> None:
    with pytest.raises(ValidationError, match="disallowedTools must be a list of tool names"):
        SubagentSpec(name="g", description="d", disallowed_tools=5)


def test_an_unknown_permission_mode_lists_each_mode_once(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        SubagentSpec.from_file(_write(tmp_path, "permissionMode: yolo"))
    listed = str(info.value).split("use one of ", 1)[1].split(", ")
    assert info.value.line == 4 and len(listed) == len(set(listed)), listed
    assert {"acceptEdits", "bypassPermissions", "plan", "default"} <= set(listed)


def test_hooks_that_are_not_a_mapping_name_the_key_cleanly(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        SubagentSpec.from_file(_write(tmp_path, "hooks: 5"))
    assert info.value.line == 4 and "hooks: expected a mapping" in str(info.value), str(info.value)
    assert "hooks.:" not in str(info.value)


def test_a_skills_entry_that_is_not_a_name_is_named(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        SubagentSpec.from_file(_write(tmp_path, "skills: [pdf, 5]"))
    assert "skills[1] must be a skill name, got a number (5)" in str(info.value), str(info.value)
