from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from agentscope_teams.state import PermissionContext, PermissionRule
from agentscope_teams.tools import (
    PermissionEngine,
    Tool,
    filesystem_tools,
    parse_rule,
    remember_rule,
    tool,
)

FS = {t.name: t for t in filesystem_tools()}
READ, WRITE, EDIT, GREP = FS["read_file"], FS["write_file"], FS["edit_file"], FS["grep_files"]
CONFIRMED_WRITE = dataclasses.replace(WRITE, requires_confirmation=True)


@tool(requires_confirmation=True)
async def run_shell(command: str) -> str:
    """Run a shell command."""
    return command


@tool
async def note(text: str) -> str:
    """Take a note."""
    return text


def deny(text: str) -> PermissionRule:
    return parse_rule(text, behavior="deny")


def ask(text: str) -> PermissionRule:
    return parse_rule(text, behavior="ask")


def allow(text: str) -> PermissionRule:
    return parse_rule(text, behavior="allow")


def test_parse_rule() -> None:
    assert parse_rule("write_file(src/**)") == PermissionRule(
        tool="write_file", behavior="allow", pattern="src/**"
    )
    assert parse_rule("Read", behavior="deny") == PermissionRule(tool="Read", behavior="deny")
    assert parse_rule("Read(*)").pattern is None
    assert parse_rule("run_shell(npm run test:*)").pattern == "npm run test:*"
    with pytest.raises(ValueError, match="Tool\\(pattern\\)"):
        parse_rule("write_file(src")
    with pytest.raises(ValueError):
        parse_rule("write_file", behavior="maybe")  # type: ignore[arg-type]


def test_defaults_by_mode() -> None:
    engine = PermissionEngine()
    assert engine.decide(run_shell, {"command": "ls"}, PermissionContext()) == "ask"
    assert engine.decide(WRITE, {"path": "a.py", "content": ""}, PermissionContext()) == "allow"
    bypass = PermissionContext(mode="bypass")
    assert engine.decide(run_shell, {"command": "rm -rf build"}, bypass) == "allow"
    edits = PermissionContext(mode="accept_edits")
    confirm_writes = PermissionEngine([ask("write_file")])
    assert confirm_writes.decide(WRITE, {"path": "a"}, PermissionContext()) == "ask"
    assert engine.decide(run_shell, {"command": "ls"}, edits) == "ask"
    assert engine.decide(EDIT, {"path": "a"}, edits) == "allow"


def test_deny_beats_allow_and_ask_beats_allow() -> None:
    engine = PermissionEngine([allow("write_file"), deny("write_file(*.env)")])
    decision = engine.check(WRITE, {"path": "config/.env"}, PermissionContext())
    assert decision.behavior == "deny"
    assert decision.reason.startswith("denied by rule deny write_file(*.env)")
    assert decision.rule == deny("write_file(*.env)")
    assert engine.decide(WRITE, {"path": "src/app.py"}, PermissionContext()) == "allow"
    engine = PermissionEngine([allow("run_shell"), ask("run_shell(git push*)")])
    assert engine.decide(run_shell, {"command": "git push origin"}, PermissionContext()) == "ask"
    assert engine.decide(run_shell, {"command": "git status"}, PermissionContext()) == "allow"


def test_deny_still_applies_in_bypass() -> None:
    engine = PermissionEngine([deny("run_shell(rm *)")], mode="bypass")
    assert engine.decide(run_shell, {"command": "rm -rf /"}, PermissionContext()) == "deny"
    assert engine.decide(run_shell, {"command": "ls"}, PermissionContext()) == "allow"


def test_plan_mode_is_read_only() -> None:
    engine = PermissionEngine([allow("write_file"), allow("note")], mode="plan")
    decision = engine.check(WRITE, {"path": "a.py", "content": "x"}, PermissionContext())
    assert decision.behavior == "deny" and "plan mode" in decision.reason
    assert engine.decide(note, {"text": "x"}, PermissionContext()) == "deny"
    assert engine.decide(READ, {"path": "a.py"}, PermissionContext()) == "allow"
    assert engine.decide(GREP, {"pattern": "x"}, PermissionContext()) == "allow"
    assert engine.decide(READ, {"path": ".env"}, PermissionContext(rules=[deny("Read(.env)")])) == (
        "deny"
    )


def test_session_mode_and_rules_combine_with_engine() -> None:
    engine = PermissionEngine([deny("write_file(*.lock)")], mode="plan")
    ctx = PermissionContext(mode="accept_edits", rules=[ask("edit_file(src/*)")])
    assert engine.effective_mode(ctx) == "accept_edits"
    assert engine.effective_mode(PermissionContext()) == "plan"
    assert engine.decide(WRITE, {"path": "a.py"}, ctx) == "allow"
    assert engine.decide(WRITE, {"path": "poetry.lock"}, ctx) == "deny"
    assert engine.decide(EDIT, {"path": "src/a.py"}, ctx) == "ask"


def test_aliases_and_wildcards() -> None:
    engine = PermissionEngine([deny("Write(*.env)"), ask("Grep(secrets/**)")])
    assert engine.decide(WRITE, {"path": ".env"}, PermissionContext()) == "deny"
    assert engine.decide(GREP, {"pattern": "key", "path": "secrets/a"}, PermissionContext()) == (
        "ask"
    )
    everything = PermissionEngine([ask("*")])
    assert everything.decide(READ, {"path": "a"}, PermissionContext()) == "ask"
    assert PermissionEngine([deny("mcp__*")]).decide(note, {"text": ""}) == "allow"


def test_explicit_argument() -> None:
    rule = PermissionRule(
        tool="edit_file", behavior="deny", pattern="*password*", argument="new_string"
    )
    engine = PermissionEngine([rule])
    args = {"path": "a.py", "old_string": "x", "new_string": "password = 1"}
    assert engine.decide(EDIT, args, PermissionContext()) == "deny"
    assert engine.decide(EDIT, {**args, "new_string": "y"}, PermissionContext()) == "allow"
    assert "on argument 'new_string'" in engine.check(EDIT, args).reason


def test_path_tricks_do_not_dodge_rules() -> None:
    engine = PermissionEngine([deny("write_file(secrets/*)")])
    for path in ["./secrets/k", "src/../secrets/k", "secrets//k"]:
        assert engine.decide(WRITE, {"path": path}, PermissionContext()) == "deny", path
    allow_src = PermissionEngine([allow("write_file(src/**)")])
    ctx = PermissionContext()
    assert allow_src.decide(CONFIRMED_WRITE, {"path": "./src/a.py"}, ctx) == "allow"
    assert allow_src.decide(CONFIRMED_WRITE, {"path": "src/../setup.py"}, ctx) == "ask"


def test_a_dot_slash_pattern_names_the_same_paths(tmp_path: Path) -> None:
    """``Read(./secrets/**)`` (Claude Code's spelling) is ``secrets/**``: a path written without
    ``./``, with ``..`` or absolute does not dodge it."""
    (tmp_path / "secrets").mkdir()
    engine = PermissionEngine([deny("Read(./secrets/**)")], mode="bypass")
    ctx = PermissionContext()
    for path in ["./secrets/k", "secrets/k", "src/../secrets/k", str(tmp_path / "secrets/k")]:
        assert engine.decide(READ, {"path": path}, ctx, workspace=tmp_path) == "deny", path
    assert engine.decide(READ, {"path": "src/k"}, ctx, workspace=tmp_path) == "allow"
    allow_src = PermissionEngine([allow("write_file(./src/**)")])
    assert allow_src.decide(CONFIRMED_WRITE, {"path": "src/a.py"}, ctx) == "allow"
    assert allow_src.decide(CONFIRMED_WRITE, {"path": "src/../setup.py"}, ctx) == "ask"


def test_an_edit_rule_covers_every_tool_claude_codes_edit_stands_for() -> None:
    """``Edit`` is ``edit_file`` and ``multi_edit`` (the tool table): a deny rule on it holds
    for both."""
    engine = PermissionEngine([deny("Edit(secrets/**)")], mode="bypass")
    args = {"path": "secrets/k", "edits": [{"old_string": "a", "new_string": "b"}]}
    assert engine.decide(FS["multi_edit"], args) == "deny"
    assert engine.decide(EDIT, {"path": "secrets/k", "old_string": "a"}) == "deny"
    assert engine.decide(FS["multi_edit"], {**args, "path": "src/k"}) == "allow"


def test_symlinks_and_absolute_paths_with_workspace(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    os.symlink(tmp_path / "secrets", tmp_path / "innocent", target_is_directory=True)
    engine = PermissionEngine([deny("read_file(secrets/*)"), allow("read_file(innocent/*)")])
    ctx = PermissionContext()
    assert engine.decide(READ, {"path": "innocent/key"}, ctx, workspace=tmp_path) == "deny"
    absolute = str(tmp_path / "secrets" / "key")
    assert engine.decide(READ, {"path": absolute}, ctx, workspace=tmp_path) == "deny"


def test_remember_rule_allows_the_same_call_only() -> None:
    engine = PermissionEngine()
    ctx = PermissionContext()
    rule = engine.remember_rule(CONFIRMED_WRITE, {"path": "./notes/[draft]*.md", "content": "x"})
    assert rule.behavior == "allow" and rule.tool == "write_file" and rule.argument == "path"
    ctx.rules.append(rule)
    assert engine.decide(CONFIRMED_WRITE, {"path": "notes/[draft]*.md"}, ctx) == "allow"
    assert engine.decide(CONFIRMED_WRITE, {"path": "notes/d.md"}, ctx) == "ask"
    assert engine.decide(CONFIRMED_WRITE, {"path": "notes/[draft]x.md"}, ctx) == "ask"
    shell = remember_rule(run_shell, {"command": "make test"})
    assert (
        PermissionEngine().decide(
            run_shell, {"command": "make test"}, PermissionContext(rules=[shell])
        )
        == "allow"
    )
    assert (
        PermissionEngine().decide(
            run_shell, {"command": "make clean"}, PermissionContext(rules=[shell])
        )
        == "ask"
    )


def test_tool_without_primary_argument() -> None:
    async def tick() -> str:
        return "t"

    bare = Tool(
        name="tick",
        description="",
        parameters={"type": "object"},
        func=tick,
        requires_confirmation=True,
    )
    assert bare.primary_argument is None
    assert remember_rule(bare, {}) == PermissionRule(tool="tick", behavior="allow")
    assert PermissionEngine([deny("tick(x*)")]).decide(bare, {}) == "ask"


def test_an_edit_rule_covers_every_tool_that_edits_files() -> None:
    """Claude Code: Edit rules apply to all built-in tools that edit files, so a deny rule on
    ``Edit`` holds for write_file and notebook_edit as well, however the path is written; a
    rule on another tool does not spread to them."""
    engine = PermissionEngine([deny("Edit(secrets/**)")], mode="bypass")
    for path in ["secrets/k", "./secrets/k", "src/../secrets/k"]:
        assert engine.decide(WRITE, {"path": path, "content": "x"}) == "deny", path
        assert engine.decide(FS["notebook_edit"], {"notebook_path": path}) == "deny", path
    assert engine.decide(WRITE, {"path": "src/k", "content": "x"}) == "allow"
    assert engine.decide(READ, {"path": "secrets/k"}) == "allow"
    notebooks = PermissionEngine([deny("NotebookEdit(secrets/**)")], mode="bypass")
    assert notebooks.decide(FS["notebook_edit"], {"notebook_path": "./secrets/n.ipynb"}) == "deny"
    assert notebooks.decide(WRITE, {"path": "secrets/k", "content": "x"}) == "allow"


@pytest.mark.parametrize("text", ["Read(secrets)", "Read(./secrets)", "Read(secrets/)"])
def test_a_deny_rule_naming_a_directory_covers_what_is_under_it(text: str) -> None:
    """Claude Code's path rules read as gitignore does: a directory a deny (or ask) rule names
    holds everything under it, so ``Read(secrets)`` is not dodged by reading ``secrets/key``."""
    engine = PermissionEngine([deny(text), ask(text.replace("secrets", "docs"))], mode="bypass")
    for path in ["secrets/key", "./secrets/sub/key", "src/../secrets/key"]:
        assert engine.decide(READ, {"path": path}) == "deny", path
        assert engine.decide(GREP, {"pattern": "x", "path": path}) == "deny", path
    assert engine.decide(READ, {"path": "docs/a.md"}) == "ask"
    for path in ["src/secrets.txt", "secretsx/key", "src/key"]:
        assert engine.decide(READ, {"path": path}) == "allow", path
    allow_src = PermissionEngine([allow(text.replace("Read", "write_file"))])
    assert allow_src.decide(CONFIRMED_WRITE, {"path": "secrets/k"}) == "ask"  # allow: exact
