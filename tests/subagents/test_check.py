"""The ``specs check`` report: a table of the loaded specs, the errors, and an exit code."""

from __future__ import annotations

import shutil
from pathlib import Path

from rich.console import Console

from agentscope_teams.subagents import load_specs
from agentscope_teams.subagents.check import check_specs, render_spec_check

CORPUS = Path(__file__).parent / "corpus"


def _console() -> Console:
    return Console(record=True, width=200, color_system=None)


def test_clean_directory_exits_zero_and_lists_specs() -> None:
    console = _console()
    code = check_specs(CORPUS / "good", model_aliases={"sonnet": "openai:gpt-4o"}, console=console)
    out = console.export_text()
    assert code == 0
    for column in ("name", "description", "model", "tools", "workspace", "warnings"):
        assert column in out
    assert "code-reviewer" in out and "openai:gpt-4o" in out
    assert "bash, bash_output, kill_shell" in out  # Claude Code's Bash maps to our bash tool
    assert "Claude Code key 'hooks'" not in out  # a spec field now: acted on, no warning
    assert "23 specs loaded" in out and "0 errors" in out


def test_errors_are_listed_with_file_and_line_and_exit_one(tmp_path: Path) -> None:
    shutil.copy(CORPUS / "good" / "as-reviewer.md", tmp_path)
    shutil.copy(CORPUS / "bad" / "workspace-bad-mode.md", tmp_path)
    shutil.copy(CORPUS / "wild" / "yaml-unquoted-colon.md", tmp_path)
    console = _console()
    assert check_specs(tmp_path, console=console, strict_yaml=True) == 1
    out = console.export_text()
    assert "as-reviewer" in out
    assert f"{tmp_path / 'workspace-bad-mode.md'}:5: workspace.mode must be one of" in out
    assert f"{tmp_path / 'yaml-unquoted-colon.md'}:3: invalid YAML" in out
    assert "1 spec loaded, 0 warnings, 2 errors" in out


def test_unquoted_colon_loads_with_a_warning_unless_strict(tmp_path: Path) -> None:
    shutil.copy(CORPUS / "wild" / "colon-in-description.md", tmp_path)
    console = _console()
    assert check_specs(tmp_path, console=console) == 0
    out = console.export_text()
    assert "release-notes-writer" in out
    assert "line 3: loaded leniently: quote the value" in out
    assert "1 spec loaded, 1 warning, 0 errors" in out
    console = _console()
    assert check_specs(tmp_path, console=console, strict_yaml=True) == 1
    out = console.export_text()
    assert f"{tmp_path / 'colon-in-description.md'}:3: invalid YAML" in out
    assert "0 specs loaded, 0 warnings, 1 error" in out


def test_markup_in_descriptions_is_printed_literally(tmp_path: Path) -> None:
    (tmp_path / "odd.md").write_text("---\ndescription: Use [bold]carefully[/bold].\n---\nHi.\n")
    console = _console()
    assert render_spec_check(load_specs(tmp_path), console) == 0
    assert "Use [bold]carefully[/bold]." in console.export_text()


def test_missing_or_empty_directory(tmp_path: Path) -> None:
    console = _console()
    assert check_specs(tmp_path / "missing", console=console) == 1
    assert "spec directory does not exist" in console.export_text()
    console = _console()
    assert check_specs(tmp_path, console=console) == 0
    assert "no *.md spec files" in console.export_text()
