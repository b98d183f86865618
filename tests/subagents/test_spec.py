"""Subagent spec loading: the corpus under ``corpus/`` (good, bad, duplicate) plus edge cases."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentscope_teams.errors import AgentScopeTeamsError, SpecError
from agentscope_teams.subagents import (
    ContextMode,
    SpecErrors,
    SubagentSpec,
    WorkspaceConfig,
    WorkspaceMode,
    load_specs,
)
from agentscope_teams.subagents.spec import IsolationMode, MemoryScope
from agentscope_teams.subagents.strict import spec_problems

CORPUS = Path(__file__).parent / "corpus"
GOOD = CORPUS / "good"
BAD = CORPUS / "bad"
ALIASES = {"sonnet": "openai:gpt-4o", "opus": "openai:o3"}
REPO_SPECS = Path(__file__).parents[2] / "specs"

# file -> (line in the file, part of the reason, text expected on that line)
BAD_CASES: dict[str, tuple[int, str, str]] = {
    "yaml-tab-indent.md": (4, "indent with spaces, not tabs", "\tmode: shared"),
    "yaml-unclosed-quote.md": (4, "quoted scalar started on line 3", "model: inherit"),
    "yaml-unclosed-flow.md": (4, "flow sequence started on line 3", "model: inherit"),
    "yaml-bad-indent.md": (5, "or fix the indentation", "   path: ./ws"),
    "no-frontmatter.md": (1, "no YAML frontmatter", "# Reviewer"),
    "unclosed-frontmatter.md": (1, "never closed", "---"),
    "frontmatter-list.md": (2, "must be a mapping of keys, got a list", "- description"),
    "frontmatter-scalar.md": (2, "must be a mapping of keys, got a string", "just a sentence"),
    "empty-frontmatter.md": (1, "the frontmatter is empty", "---"),
    "missing-description.md": (1, "description is required", "---"),
    "empty-description.md": (3, "description is empty", 'description: ""'),
    "description-list.md": (2, "description must be a string, got a list", "description:"),
    "steps-zero.md": (4, "steps must be a positive integer", "steps: 0"),
    "steps-negative-alias.md": (
        4,
        "max_iters (alias of steps) must be a positive",
        "max_iters: -3",
    ),
    "steps-string.md": (3, "got a string ('many')", "steps:"),
    "steps-float.md": (3, "got a number (2.5)", "steps: 2.5"),
    "steps-conflict.md": (4, "steps (5) and its alias max_iters (10) disagree", "max_iters: 10"),
    "workspace-bad-mode.md": (5, "workspace.mode must be one of isolated, shared", "mode: sandbox"),
    "workspace-list.md": (3, "workspace must be a mapping", "workspace: [isolated]"),
    "workspace-unknown-key.md": (5, "unknown key 'workspace.size'", "  size: 10"),
    "tools-number.md": (3, "tools must be a list of tool names or a comma-separated", "tools: 5"),
    "tools-bad-entry.md": (5, "tools[1] must be a tool name, got a number (42)", "  - 42"),
    "model-number.md": (3, "model must be a model name", "model: 4"),
    "context-bad.md": (3, "context must be one of fresh, fork, got a string ('copy')", "context:"),
    "name-invalid.md": (2, "name must be 1-64 letters, digits", "name: code reviewer!"),
    "bad name.md": (1, "the file name 'bad name' is not a valid subagent name", "---"),
    "duplicate-key.md": (5, "key 'model' appears twice (lines 3 and 5)", "model: openai:gpt-4o"),
    "not-utf8.md": (3, "not valid UTF-8 (byte 0xe9)", "description: caf"),
}
# Written by the `bad_dir` fixture: a committed non-UTF-8 file would trip `ruff format --check .`.
NOT_UTF8 = b"---\nname: latin\ndescription: caf\xe9 in Latin-1\n---\nBody.\n"


@pytest.fixture
def bad_dir(tmp_path: Path) -> Path:
    """The bad corpus plus the non-UTF-8 case."""
    directory = tmp_path / "bad"
    shutil.copytree(BAD, directory)
    (directory / "not-utf8.md").write_bytes(NOT_UTF8)
    return directory


def _line(path: Path, number: int) -> str:
    return path.read_bytes().decode("utf-8", "replace").splitlines()[number - 1]


def test_corpus_is_big_enough() -> None:
    files = list(CORPUS.rglob("*.md"))
    assert len(files) >= 30
    expected = set(BAD_CASES) | {"several-errors.md"}
    assert expected == {p.name for p in BAD.glob("*.md")} | {"not-utf8.md"}


# -- bad files: one clear error, right file, right line ---------------------------------------------


@pytest.mark.parametrize("name", sorted(BAD_CASES))
def test_bad_file_names_file_line_and_reason(name: str, bad_dir: Path) -> None:
    line, reason, text_on_line = BAD_CASES[name]
    path = bad_dir / name
    with pytest.raises(SpecError) as info:
        SubagentSpec.from_file(path)
    error = info.value
    assert not isinstance(error, SpecErrors)
    assert (error.file, error.line) == (path, line), str(error)
    assert reason in error.reason
    assert text_on_line in _line(path, line)
    assert str(error).startswith(f"{path}:{line}: ")
    assert isinstance(error, AgentScopeTeamsError)


def test_file_with_several_problems_reports_each() -> None:
    path = BAD / "several-errors.md"
    with pytest.raises(SpecErrors) as info:
        SubagentSpec.from_file(path)
    found = [(e.file, e.line, e.reason.split(" ")[0]) for e in info.value.errors]
    assert found == [(path, 3, "steps"), (path, 4, "context")]
    assert "2 problems in 1 spec file" in str(info.value)


def test_load_specs_reports_every_bad_file_at_once(bad_dir: Path) -> None:
    with pytest.raises(SpecErrors) as info:
        load_specs(bad_dir)
    errors = info.value.errors
    assert {e.file.name for e in errors if e.file} == set(BAD_CASES) | {"several-errors.md"}
    assert len(errors) == len(BAD_CASES) + 2
    message = str(info.value)
    assert message.startswith(f"{bad_dir}: 30 problems in 29 spec files")
    for name, (line, _, _) in BAD_CASES.items():
        assert f"{bad_dir / name}:{line}: " in message
    assert isinstance(info.value, SpecError)


def test_lenient_mode_loads_good_files_and_returns_errors(tmp_path: Path) -> None:
    for path in [*GOOD.glob("*.md"), BAD / "steps-zero.md", BAD / "no-frontmatter.md"]:
        shutil.copy(path, tmp_path / path.name)
    result = load_specs(tmp_path, strict=False)
    assert not result.ok
    assert [(e.file.name if e.file else None, e.line) for e in result.errors] == [
        ("no-frontmatter.md", 1),
        ("steps-zero.md", 4),
    ]
    assert set(result.specs) == set(load_specs(GOOD).specs)
    assert len(result.specs) == len(list(GOOD.glob("*.md")))


def test_duplicate_names_name_both_files() -> None:
    directory = CORPUS / "duplicate"
    with pytest.raises(SpecErrors) as info:
        load_specs(directory)
    [error] = info.value.errors
    assert (error.file, error.line) == (directory / "beta.md", 3)
    assert f"duplicate subagent name 'twin': {directory / 'alpha.md'}:2 already uses it" in str(
        error
    )
    result = load_specs(directory, strict=False)
    assert result.specs["twin"].description == "The first twin."
    assert len(result.errors) == 1


def test_missing_directory_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="spec directory does not exist"):
        load_specs(tmp_path / "nope")
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(SpecError, match="is not a directory"):
        load_specs(tmp_path / "file.md")


# -- good files -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(GOOD.glob("*.md")), ids=lambda p: p.name)
def test_good_file_loads(path: Path) -> None:
    spec = SubagentSpec.from_file(path, model_aliases=ALIASES)
    assert spec.source == path
    assert spec.description
    assert spec.tools is None or all(tool[0].islower() for tool in spec.tools)


def test_whole_good_corpus_loads_strictly() -> None:
    result = load_specs(GOOD, model_aliases=ALIASES)
    assert result.ok
    assert len(result.specs) == 23
    assert all(name == spec.name for name, spec in result.specs.items())


def test_claude_code_reviewer_loads_unchanged() -> None:
    spec = load_specs(GOOD, model_aliases=ALIASES).specs["code-reviewer"]
    assert spec.description.startswith("Expert code review specialist.")
    assert spec.tools == [
        "read_file",
        "grep_files",
        "glob_files",
        "bash",
        "bash_output",
        "kill_shell",
    ]
    assert spec.unavailable_tools == []
    assert spec.model == "openai:gpt-4o"
    assert spec.extra == {} and spec.color == "blue"
    assert spec.system_prompt.startswith("You are a senior code reviewer")
    assert spec.system_prompt.endswith("critical issues, warnings, suggestions.")
    assert spec.warnings == []
    assert (spec.workspace.mode, spec.context, spec.steps) == (
        WorkspaceMode.ISOLATED,
        ContextMode.FRESH,
        None,
    )


def test_claude_code_tool_names_are_mapped() -> None:
    spec = SubagentSpec.from_file(GOOD / "cc-folded-description.md")
    assert spec.tools == ["read_file", "write_file", "edit_file", "multi_edit", "list_files"]
    assert spec.description == (
        "Refactoring specialist. Use when a module has grown too large or duplicates logic found "
        "elsewhere."
    )


def test_mcp_tools_are_kept_and_patterned_tools_keep_their_rules() -> None:
    triager = SubagentSpec.from_file(GOOD / "cc-github-triager.md")
    # MCP tools are served by the agent's MCP servers (agentscope_teams.mcp), not dropped
    assert triager.tools == ["read_file", "mcp__github__create_issue", "mcp__github__list_issues"]
    assert triager.unavailable_tools == []
    historian = SubagentSpec.from_file(GOOD / "cc-bash-patterns.md")
    assert historian.tools == [
        "bash",
        "bash_output",
        "kill_shell",
        "read_file",
        "web_fetch",
        "web_search",
        "todo_write",
    ]
    assert historian.unavailable_tools == []
    # a rule in parentheses limits that tool to what it allows (Claude Code's allowlist)
    assert historian.tool_rules == ["Bash(git diff:*)", "Bash(git log:*)"]


def test_tools_absent_inherit_and_empty_list_means_none() -> None:
    assert SubagentSpec.from_file(GOOD / "cc-inherit-tools.md").tools is None
    assert SubagentSpec.from_file(GOOD / "as-no-tools.md").tools == []
    custom = SubagentSpec.from_file(GOOD / "as-custom-tools.md")
    assert custom.tools == ["read_file", "search_docs", "grep_files"]
    assert custom.unavailable_tools == []


def test_model_aliases_inherit_and_full_names() -> None:
    triager = SubagentSpec.from_file(GOOD / "cc-github-triager.md", model_aliases=ALIASES)
    assert triager.model == "haiku"  # not in ALIASES: the model registry builds it
    assert not any("haiku" in w for w in triager.warnings)
    assert SubagentSpec.from_file(GOOD / "cc-permission-mode.md", model_aliases=ALIASES).model == (
        "openai:o3"
    )
    unmapped = SubagentSpec.from_file(GOOD / "cc-code-reviewer.md")
    assert unmapped.model == "sonnet"
    assert not any("sonnet" in w for w in unmapped.warnings)
    assert SubagentSpec.from_file(GOOD / "cc-multiline-examples.md").model is None  # inherit
    assert SubagentSpec.from_file(GOOD / "cc-quoted-description.md").model == "claude-sonnet-4-5"


def test_multiline_description_with_colons_in_block_scalar() -> None:
    spec = SubagentSpec.from_file(GOOD / "cc-multiline-examples.md")
    assert 'user: "Please add tests for the parser"' in spec.description
    assert spec.extra == {} and spec.color == "purple"


def test_agentscope_style_spec() -> None:
    spec = SubagentSpec.from_file(GOOD / "as-reviewer.md")
    assert spec.name == "as-reviewer"  # from the file stem
    assert spec.model == "openai:gpt-4o-mini"
    assert spec.steps == 8
    assert spec.tools == ["read_file", "grep_files"]
    assert spec.workspace == WorkspaceConfig(
        mode=WorkspaceMode.ISOLATED, path=(GOOD / "defs" / "reviewer").resolve()
    )
    assert spec.system_prompt == "You are a subagent focused on code review."
    assert spec.warnings == []


def test_workspace_forms() -> None:
    assert SubagentSpec.from_file(GOOD / "as-shared-tester.md").workspace.mode == "shared"
    flow = SubagentSpec.from_file(GOOD / "as-flow-workspace.md")
    assert flow.workspace.mode is WorkspaceMode.SHARED
    assert flow.tools == ["read_file", "glob_files"]
    absolute = SubagentSpec.from_file(GOOD / "as-absolute-workspace.md")
    assert absolute.workspace.path == Path("/srv/agentscope/scratch")


def test_steps_alias_and_context() -> None:
    assert SubagentSpec.from_file(GOOD / "as-max-iters.md").steps == 12
    assert SubagentSpec.from_file(GOOD / "as-steps-alias-agree.md").steps == 5
    assert SubagentSpec.from_file(GOOD / "as-forked.md").context is ContextMode.FORK
    assert SubagentSpec.from_file(GOOD / "as-shared-tester.md").context is ContextMode.FRESH


def test_unknown_keys_are_kept_and_warned_about() -> None:
    spec = SubagentSpec.from_file(GOOD / "as-unknown-keys.md")
    assert spec.extra == {"owner": "platform-team", "Steps": 4}
    assert spec.steps is None
    assert spec.warnings == [
        "line 4: unknown key 'owner' is ignored (kept in `extra`)",
        "line 5: unknown key 'Steps' is ignored (kept in `extra`); did you mean 'steps'?",
    ]
    planner = SubagentSpec.from_file(GOOD / "cc-permission-mode.md")
    assert planner.permission_mode == "plan" and planner.skills == ["architecture"]
    assert planner.removed_tools == ["write_file", "edit_file", "multi_edit"]
    assert planner.extra == {}  # hooks: is a field now, acted on
    assert planner.hooks["PreToolUse"][0]["matcher"] == "Read"


def test_name_from_stem_empty_body_and_bom() -> None:
    assert SubagentSpec.from_file(GOOD / "as_name_from_stem.md").name == "as_name_from_stem"
    silent = SubagentSpec.from_file(GOOD / "as-empty-body.md")
    assert silent.system_prompt == ""
    assert silent.warnings == ["line 4: the body is empty, so the subagent has no system prompt"]
    assert SubagentSpec.from_file(GOOD / "as-bom.md").name == "bom"


def test_load_result_warnings_name_file_and_line() -> None:
    result = load_specs(GOOD, model_aliases=ALIASES)
    shown = {str(w) for w in result.warnings}
    assert not any("'hooks'" in w for w in shown)  # a field now, no warning
    assert all(w.file is not None and w.line for w in result.warnings)


def test_crlf_line_endings_keep_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "crlf.md"
    path.write_bytes(
        b"---\r\nname: crlf\r\ndescription: Windows file.\r\nsteps: 2\r\n---\r\nHi.\r\n"
    )
    spec = SubagentSpec.from_file(path)
    assert (spec.steps, spec.system_prompt) == (2, "Hi.")
    path.write_bytes(b"---\r\ndescription: Windows file.\r\n\r\nsteps: 0\r\n---\r\nHi.\r\n")
    with pytest.raises(SpecError) as info:
        SubagentSpec.from_file(path)
    assert info.value.line == 4


def test_frontmatter_after_blank_lines_counts_them(tmp_path: Path) -> None:
    path = tmp_path / "late.md"
    path.write_text("\n\n---\ndescription: Late start.\ncontext: later\n---\nBody.\n")
    with pytest.raises(SpecError) as info:
        SubagentSpec.from_file(path)
    assert info.value.line == 5


def test_claude_agents_directory_loads(tmp_path: Path) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    for name in ("cc-code-reviewer.md", "cc-debugger.md", "cc-permission-mode.md"):
        shutil.copy(GOOD / name, agents / name)
    result = load_specs(agents, model_aliases=ALIASES)
    assert set(result.specs) == {"code-reviewer", "debugger", "planner"}


# -- programmatic construction ----------------------------------------------------------------------


def test_programmatic_spec_matches_file(tmp_path: Path) -> None:
    path = tmp_path / "helper.md"
    path.write_text(
        "---\ndescription: Helps.\ntools: Read, Bash\nmax_iters: 4\n"
        "workspace:\n  mode: shared\n---\nBe helpful.\n"
    )
    built = SubagentSpec(
        name="helper",
        description="Helps.",
        tools="Read, Bash",
        max_iters=4,  # type: ignore[call-arg]  # the alias is accepted, like in a file
        workspace={"mode": "shared"},
        system_prompt="Be helpful.",
    )
    loaded = SubagentSpec.from_file(path)
    keys = (
        "name",
        "description",
        "tools",
        "unavailable_tools",
        "steps",
        "workspace",
        "system_prompt",
    )
    assert {k: getattr(built, k) for k in keys} == {k: getattr(loaded, k) for k in keys}
    assert built.source is None


def test_programmatic_model_alias_through_context() -> None:
    data = {"name": "x", "description": "d", "model": "opus"}
    assert (
        SubagentSpec.model_validate(data, context={"model_aliases": ALIASES}).model == "openai:o3"
    )
    spec = SubagentSpec.model_validate(data)
    assert spec.model == "opus"  # resolved later by the model registry (an Anthropic model)
    assert spec.warnings == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"colour": "blue"}, "Extra inputs are not permitted"),
        ({"permissionMode": "yolo"}, "unknown permission mode 'yolo'"),
        ({"maxTurns": 0}, "maxTurns must be a whole number"),
        ({"effort": "extreme"}, "effort must be one of"),
        ({"steps": 0}, "steps must be a positive integer"),
        ({"steps": True}, "steps must be a positive integer"),
        ({"description": "  "}, "description is empty"),
        ({"name": "a b"}, "name must be 1-64 letters"),
        ({"name": "x" * 65}, "name must be 1-64 letters"),
        ({"name": ".hidden"}, "must not start or end with '.'"),
        ({"name": "v2."}, "must not start or end with '.'"),
        ({"workspace": {"mode": "remote"}}, "workspace.mode must be one of isolated, shared"),
        ({"context": "clone"}, "context must be one of fresh, fork"),
        ({"steps": 3, "max_iters": 5}, "disagree"),
    ],
)
def test_programmatic_validation(kwargs: dict[str, object], message: str) -> None:
    data: dict[str, object] = {"name": "x", "description": "d", **kwargs}
    with pytest.raises(ValidationError, match=message):
        SubagentSpec.model_validate(data)


@pytest.mark.parametrize("name", ["dotnet-framework-4.8-expert", "a.b", "x..y", "_x", "-x", "7"])
def test_names_may_hold_dots(name: str) -> None:
    assert SubagentSpec(name=name, description="d").name == name


def test_spec_is_frozen_and_round_trips() -> None:
    spec = SubagentSpec.from_file(GOOD / "cc-code-reviewer.md", model_aliases=ALIASES)
    with pytest.raises(ValidationError):
        spec.name = "other"  # type: ignore[misc]
    assert SubagentSpec.model_validate(spec.model_dump()) == spec


# -- the example specs shipped in specs/ --------------------------------------------------------------


def test_repository_example_specs_load() -> None:
    result = load_specs(REPO_SPECS)
    assert set(result.specs) >= {"reviewer", "security-scanner", "perf-tester"}
    for name in ("reviewer", "security-scanner", "perf-tester"):
        spec = result.specs[name]
        assert spec.warnings == []
        assert spec.tools == ["read_file", "grep_files", "list_files", "glob_files"]
        assert spec.workspace.mode is WorkspaceMode.SHARED
        assert spec.steps is not None and spec.steps > 0
        prompt = spec.system_prompt
        assert "claimTask" in prompt and "completeTask" in prompt and "sendMessage" in prompt
        assert "`data`" in prompt and "JSON schema" in prompt  # findings go as structured data
        assert all(s in prompt for s in ("`critical`", "`high`", "`medium`", "`low`"))
    security = result.specs["security-scanner"].description
    assert all(word in security for word in ("eval", "shell injection", "deserialization", "SQL"))


def test_workspace_shorthand_and_empty_path(tmp_path: Path) -> None:
    path = tmp_path / "short.md"
    path.write_text("---\ndescription: Shorthand.\nworkspace: shared\n---\nHi.\n")
    assert SubagentSpec.from_file(path).workspace == WorkspaceConfig(mode=WorkspaceMode.SHARED)
    path.write_text("---\ndescription: Empty path.\nworkspace:\n  mode: shared\n  path: ''\n---\n")
    with pytest.raises(SpecError) as info:
        SubagentSpec.from_file(path)
    assert (info.value.line, info.value.reason) == (
        5,
        "workspace.path must be a directory path, got a string ('')",
    )


def test_memory_and_isolation_are_spec_keys_checked_by_value(tmp_path: Path) -> None:
    path = tmp_path / "keeper.md"
    path.write_text(
        "---\ndescription: Remembers.\nmemory: project\nisolation: worktree\n---\nHi.\n"
    )
    keeper = SubagentSpec.from_file(path)
    assert keeper.memory is MemoryScope.PROJECT and keeper.isolation is IsolationMode.WORKTREE
    assert keeper.extra == {} and keeper.warnings == []
    assert spec_problems(keeper, None) == []  # --strict has nothing to flag
    path.write_text("---\ndescription: Remembers.\nmemory: team\nisolation: docker\n---\nHi.\n")
    with pytest.raises(SpecErrors) as caught:
        SubagentSpec.from_file(path)
    text = str(caught.value)
    assert "3: memory must be one of user, project, local, got a string ('team')" in text
    assert "4: isolation must be one of worktree, got a string ('docker')" in text


@pytest.mark.parametrize("front", ["maxTokens: true", "maxBudgetUsd: true", "maxTokens: '9'"])
def test_a_budget_that_is_not_a_number_is_an_error_on_its_line(tmp_path: Path, front: str) -> None:
    path = tmp_path / "budget.md"
    path.write_text(f"---\ndescription: Spends.\n{front}\n---\nSpend.\n")
    with pytest.raises(SpecError) as info:
        SubagentSpec.from_file(path)
    assert info.value.line == 3 and front.split(":")[0] in str(info.value)
