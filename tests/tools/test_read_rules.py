"""``Read`` permission rules hold for every file tool that reads: grep_files, glob_files and
list_files (Claude Code's Grep, Glob, LS) as well as read_file, as in Claude Code."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.compose import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import ToolResultBlock, ToolUseBlock
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.state import PermissionContext
from agentscope_teams.store import InMemoryStore
from agentscope_teams.tools import PermissionEngine, ToolEnv, Toolkit, filesystem_tools, parse_rule

FS = {t.name: t for t in filesystem_tools()}
DENY = parse_rule("Read(./secrets/**)", behavior="deny")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key").write_text("API_KEY=hunter2\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("API_KEY = os.environ['API_KEY']\n")
    os.symlink(root / "secrets" / "key", root / "src" / "innocent.txt")
    return root


async def run(ws: Path, engine: PermissionEngine, name: str, **arguments: Any) -> ToolResultBlock:
    env = ToolEnv(workspace=ws, read_guard=engine.read_guard(workspace=ws))
    call = ToolUseBlock(id="c1", name=name, input=arguments)
    return await Toolkit(filesystem_tools()).execute(call, env=env)


@pytest.mark.parametrize("rule", ["Read(./secrets/**)", "read_file(secrets/**)"])
def test_a_read_rule_decides_search_and_listing_calls_on_their_path(rule: str) -> None:
    """A call of grep_files / glob_files / list_files naming a path a Read rule covers is denied
    (or asks) as read_file of that path is; elsewhere the rule does not apply."""
    for behavior in ("deny", "ask"):
        engine = PermissionEngine([parse_rule(rule, behavior=behavior)], mode="bypass")  # type: ignore[arg-type]
        for name in ("grep_files", "glob_files", "list_files"):
            args = {"pattern": "x", "path": "secrets/sub"}
            decision = engine.check(FS[name], args, PermissionContext())
            assert decision.behavior == behavior, (name, decision)
            assert rule in decision.reason
            assert engine.decide(FS[name], {**args, "path": "src"}) == "allow", name
    # a rule on another tool does not spread: Grep(...) is about grep_files only
    engine = PermissionEngine([parse_rule("Edit(./secrets/**)", behavior="deny")], mode="bypass")
    assert engine.decide(FS["grep_files"], {"pattern": "x", "path": "secrets/k"}) == "allow"


async def test_grep_does_not_show_the_content_of_files_a_read_rule_denies(ws: Path) -> None:
    engine = PermissionEngine([DENY])
    result = await run(ws, engine, "grep_files", pattern="API_KEY")
    assert not result.is_error, result.output
    assert result.output == "src/app.py:1: API_KEY = os.environ['API_KEY']"
    assert "hunter2" not in result.output  # neither secrets/key nor the symlink to it
    control = await run(ws, PermissionEngine(), "grep_files", pattern="hunter2")
    assert "secrets/key:1: API_KEY=hunter2" in control.output


async def test_glob_and_list_do_not_name_files_a_read_rule_denies(ws: Path) -> None:
    engine = PermissionEngine([DENY])
    found = await run(ws, engine, "glob_files", pattern="**/*")
    assert found.output.splitlines() == ["src/app.py"]
    listed = await run(ws, engine, "list_files", path="secrets")
    assert "key" not in listed.output
    listed = await run(ws, engine, "list_files", path="src")
    assert listed.output.splitlines() == ["src/app.py"]


async def test_a_denied_search_root_is_a_tool_error_naming_the_rule(ws: Path) -> None:
    engine = PermissionEngine([DENY])
    for name, args in [
        ("grep_files", {"pattern": "API", "path": "secrets/key"}),
        ("grep_files", {"pattern": "API", "path": "src/innocent.txt"}),
        ("glob_files", {"pattern": "*", "path": "secrets/key"}),
        ("read_file", {"path": "src/innocent.txt"}),
    ]:
        result = await run(ws, engine, name, **args)
        assert result.is_error, (name, result.output)
        assert "secrets/key cannot be read: denied by rule deny Read(./secrets/**)" in result.output


def _tool_results(request: ModelRequest) -> list[str]:
    return [
        b.output
        for msg in request.messages
        if isinstance(msg.content, list)
        for b in msg.content
        if isinstance(b, ToolResultBlock)
    ]


async def test_an_agent_with_a_read_deny_rule_cannot_grep_or_glob_the_denied_files(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key").write_text("API_KEY=hunter2\n")
    (root / "notes.md").write_text("the API_KEY lives elsewhere\n")
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("grep_files", {"pattern": "API_KEY"}),
            ScriptedModel.tool_call("glob_files", {"pattern": "**/*"}),
            "done",
        ]
    )
    agent = HarnessAgent(
        "lead",
        model,
        "sys",
        workspace=root,
        workspace_scope="shared",
        store=InMemoryStore(),
        permissions=PermissionEngine([DENY], mode="bypass"),
    )
    async with agent:
        await agent.call("find the key", RuntimeContext(session_id="s1", user_id="alice"))
    grep_out, glob_out = _tool_results(model.requests[2])
    assert grep_out == "notes.md:1: the API_KEY lives elsewhere"
    assert glob_out == "notes.md"


@pytest.mark.parametrize("spelling", ["absolute", "home"])
async def test_absolute_and_home_patterns_name_files_of_the_workspace(
    ws: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    """``Read(//abs/path/**)`` (from the file-system root) and ``Read(~/path/**)`` (from the home
    directory), Claude Code's spellings, cover a file of the workspace at that place however the
    call writes its path."""
    monkeypatch.setenv("HOME", str(ws.parent))
    text = f"Read(/{ws}/secrets/**)" if spelling == "absolute" else "Read(~/ws/secrets/**)"
    engine = PermissionEngine([parse_rule(text, behavior="deny")], mode="bypass")
    read = FS["read_file"]
    for path in ["secrets/key", "./secrets/key", str(ws / "secrets" / "key"), "src/innocent.txt"]:
        assert engine.decide(read, {"path": path}, workspace=ws) == "deny", path
    assert engine.decide(read, {"path": "src/app.py"}, workspace=ws) == "allow"
    found = await run(ws, engine, "grep_files", pattern="API_KEY")
    assert found.output == "src/app.py:1: API_KEY = os.environ['API_KEY']"


async def test_edits_do_not_tell_the_content_of_a_file_a_read_rule_denies(ws: Path) -> None:
    """edit_file's answers (not found, found n times, at line n) would tell a Read-denied file's
    content a guess at a time; the tools that read a file to change it refuse it as read_file
    does (Claude Code edits only a file it has read)."""
    (ws / "secrets" / "nb.ipynb").write_text('{"cells": [], "metadata": {}}')
    engine = PermissionEngine([DENY])
    edits = [{"old_string": "API_KEY=a", "new_string": "x"}]
    for name, args in [
        ("edit_file", {"path": "secrets/key", "old_string": "API_KEY=a", "new_string": "x"}),
        ("multi_edit", {"path": "secrets/key", "edits": edits}),
        ("notebook_edit", {"notebook_path": "secrets/nb.ipynb", "cell_id": "3"}),
    ]:
        result = await run(ws, engine, name, **args)
        assert result.is_error
        assert "cannot be read: denied by rule deny Read(./secrets/**)" in result.output, name
    assert (ws / "secrets" / "key").read_text() == "API_KEY=hunter2\n"
    done = await run(ws, engine, "write_file", path="secrets/new", content="x")  # reads nothing
    assert not done.is_error, done.output
