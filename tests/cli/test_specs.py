"""``agentscope-teams specs check DIR`` through the console script."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .conftest import REPO, Cli

CORPUS = REPO / "tests" / "subagents" / "corpus"


def test_check_the_example_specs(cli: Cli) -> None:
    result = cli("specs", "check", "specs/")
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("reviewer", "security-scanner", "perf-tester"):
        assert name in result.stdout
    assert "3 specs loaded, 0 warnings, 0 errors" in result.stdout


def test_a_bad_spec_names_file_and_line_and_exits_one(cli: Cli, tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(REPO / "specs" / "reviewer.md", specs)
    shutil.copy(CORPUS / "bad" / "workspace-bad-mode.md", specs)
    result = cli("specs", "check", str(specs))
    assert result.returncode == 1
    assert f"{specs / 'workspace-bad-mode.md'}:5: workspace.mode must be one of" in result.stdout
    assert "reviewer" in result.stdout
    assert "1 spec loaded, 0 warnings, 1 error" in result.stdout


def test_json_lines(cli: Cli, tmp_path: Path) -> None:
    shutil.copy(CORPUS / "wild" / "yaml-unquoted-colon.md", tmp_path)
    shutil.copy(REPO / "specs" / "reviewer.md", tmp_path)
    result = cli("specs", "check", str(tmp_path), "--json", "--strict")
    assert result.returncode == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["kind"] for line in lines] == ["spec", "error"]
    assert lines[0]["name"] == "reviewer" and "system_prompt" not in lines[0]
    assert lines[1]["file"] == str(tmp_path / "yaml-unquoted-colon.md")
    assert lines[1]["line"] == 3


def test_missing_directory_exits_one(cli: Cli, tmp_path: Path) -> None:
    result = cli("specs", "check", str(tmp_path / "missing"))
    assert result.returncode == 1
    assert "spec directory does not exist" in result.stdout


def test_unquoted_colon_is_a_warning_and_strict_refuses_it(cli: Cli, tmp_path: Path) -> None:
    shutil.copy(CORPUS / "wild" / "colon-in-description.md", tmp_path)
    shutil.copy(CORPUS / "wild" / "dotnet-framework-4.8-expert.md", tmp_path)
    result = cli("specs", "check", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "dotnet-framework-4.8-expert" in result.stdout
    assert "loaded leniently" in result.stdout
    assert "2 specs loaded, 1 warning, 0 errors" in result.stdout  # sonnet is an Anthropic model

    result = cli("specs", "check", "--strict", str(tmp_path))
    assert result.returncode == 1
    assert f"{tmp_path / 'colon-in-description.md'}:3: invalid YAML" in result.stdout
    assert "1 spec loaded, 0 warnings, 1 error" in result.stdout
    assert result.stderr == ""

    result = cli("specs", "check", str(tmp_path), "--json")
    assert result.returncode == 0
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["kind"], line["name"]) for line in lines] == [
        ("spec", "dotnet-framework-4.8-expert"),
        ("spec", "release-notes-writer"),
    ]
    assert lines[1]["warnings"][0].startswith(
        "line 3: loaded leniently: quote the value of 'description'"
    )


def test_strict_refuses_what_would_not_behave_as_written(cli: Cli, tmp_path: Path) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"github": {"command": "gh-mcp"}}}')
    (agents / "fine.md").write_text(
        "---\nname: fine\ndescription: Uses what exists.\ntools: Read, Bash, mcp__github\n"
        "mcpServers:\n  - github\nmodel: sonnet\npermissionMode: acceptEdits\n---\nHi.\n"
    )
    (agents / "lossy.md").write_text(
        "---\nname: lossy\ndescription: Loses things.\ntools: Read, LSP\nmodel: gpt-9000\n"
        "mcpServers:\n  - jira\nmemory: user\nhooks:\n  Stop: []\n---\nHi.\n"
    )
    lenient = cli("specs", "check", str(agents))
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    assert "mode accept_edits" in lenient.stdout  # the keys that act are shown
    strict = cli("specs", "check", "--strict", str(agents))
    assert strict.returncode == 1
    out = strict.stdout
    lossy = agents / "lossy.md"
    assert f"{lossy}:4: tool 'LSP' has no counterpart here" in out
    assert f"{lossy}:5: unknown model 'gpt-9000'" in out
    assert f"{lossy}:6: MCP server 'jira' is not configured (configured: github)" in out
    assert "is not acted on here" not in out  # memory: and hooks: are acted on now
    assert str(agents / "fine.md") + ":" not in out  # nothing to report for it


def test_check_says_which_listed_tools_this_machine_does_not_offer(
    cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "searcher.md").write_text(
        "---\nname: searcher\ndescription: Searches.\ntools: WebSearch, Read\n---\nSearch.\n"
    )
    result = cli.run("specs", "check", str(tmp_path), BRAVE_API_KEY="")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "web_search (searcher) is not offered here: needs a search provider" in result.stdout
    configured = cli.run("specs", "check", str(tmp_path), BRAVE_API_KEY="k")
    assert "not offered here" not in configured.stdout
