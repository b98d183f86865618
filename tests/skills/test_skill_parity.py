"""SKILL.md files read as Claude Code reads them: an unquoted ': ' in a value (common in skill
descriptions) loads, with a warning; other YAML mistakes are errors naming the file and line."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agentscope_teams.errors import ConfigurationError
from agentscope_teams.skills import load_skill


def _write(root: Path, text: str) -> Path:
    path = root / "pdf" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_an_unquoted_colon_in_the_description_loads_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _write(
        tmp_path,
        "---\nname: pdf\ndescription: Builds PDFs. Use when: the user asks for a report\n"
        "allowed-tools: Read, Bash\n---\nSteps.\n",
    )
    with caplog.at_level(logging.WARNING):
        skill = load_skill(path)
    assert skill.description == "Builds PDFs. Use when: the user asks for a report"
    assert skill.allowed_tools == ("Read", "Bash")
    assert any(
        str(path) in r.getMessage() and "description" in r.getMessage() for r in caplog.records
    )


def test_a_broken_frontmatter_names_the_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "---\nname: pdf\ndescription: [unclosed\n---\nSteps.\n")
    with pytest.raises(ConfigurationError) as caught:
        load_skill(path)
    assert str(path) in str(caught.value) and "line 3" in str(caught.value)
