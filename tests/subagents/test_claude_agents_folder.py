"""A Claude Code project's ``.claude/agents`` folder as Claude Code reads it.

Claude Code finds agent files in the subfolders of ``.claude/agents`` too (``agents/team/builder.md``
is the ``builder`` agent: identity comes from ``name:``, not from the path), and a Markdown file
there without any frontmatter (a README for people) is not an agent: it is skipped, the other
agents still load.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams.subagents import load_specs


def _agent(path: Path, name: str, description: str = "Does one thing.") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\nYou are {name}.\n")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    agents = tmp_path / ".claude" / "agents"
    _agent(agents / "top.md", "top")
    _agent(agents / "team" / "builder.md", "builder")
    _agent(agents / "team" / "deep" / "checker.md", "checker")
    return tmp_path


def test_agents_in_subfolders_load(project: Path) -> None:
    result = load_specs(project / ".claude" / "agents")
    assert sorted(result.specs) == ["builder", "checker", "top"]
    assert result.specs["builder"].source == project / ".claude/agents/team/builder.md"


def test_a_readme_without_frontmatter_is_skipped_with_a_warning(project: Path) -> None:
    agents = project / ".claude" / "agents"
    (agents / "README.md").write_text("# Our agents\n\nNotes for people.\n")
    (agents / "team" / "NOTES.md").write_text("Notes.\n")
    result = load_specs(agents)  # strict: would raise on an error
    assert sorted(result.specs) == ["builder", "checker", "top"]
    skipped = sorted(str(w.file) for w in result.warnings if "not an agent file" in w.message)
    assert skipped == [str(agents / "README.md"), str(agents / "team" / "NOTES.md")]


def test_duplicate_name_across_subfolders_names_both_files(project: Path) -> None:
    agents = project / ".claude" / "agents"
    _agent(agents / "other" / "builder.md", "builder")
    result = load_specs(agents, strict=False)
    assert len(result.errors) == 1
    message = str(result.errors[0])
    assert "duplicate subagent name 'builder'" in message
    assert "other/builder.md" in message and "team/builder.md" in message


def test_hidden_subfolders_are_not_read(project: Path) -> None:
    agents = project / ".claude" / "agents"
    _agent(agents / ".archive" / "old.md", "old")
    assert "old" not in load_specs(agents).specs


def test_a_plain_spec_folder_stays_flat_and_strict(tmp_path: Path) -> None:
    """Our own ``specs/`` folders keep their rules: top level only, no frontmatter is an error."""
    _agent(tmp_path / "specs" / "a.md", "a")
    _agent(tmp_path / "specs" / "seed" / "b.md", "b")
    (tmp_path / "specs" / "README.md").write_text("# specs\n")
    result = load_specs(tmp_path / "specs", strict=False)
    assert sorted(result.specs) == ["a"]
    assert any("no YAML frontmatter" in str(e) for e in result.errors)


def test_a_subfolder_agent_belongs_to_the_project(project: Path) -> None:
    """It works in the project (shared workspace, as a top-level agent file) and its project is
    the one the operator trusts (its hooks and grants follow that trust)."""
    from agentscope_teams.trust import project_root

    builder = load_specs(project / ".claude" / "agents").specs["builder"]
    assert builder.workspace.mode == "shared"
    assert project_root(project / ".claude/agents/team/deep/checker.md") == project.resolve()
