"""``Read`` deny rules reach the file commands the engine recognizes in a ``bash`` command
(``cat``, ``head``, ``tail``, ``sed``, ``grep``...), as Claude Code documents ("Read and Edit deny
rules apply to Claude's built-in file tools and to file commands Claude Code recognizes in Bash,
such as cat, head, tail, and sed"), with or without the sandbox; not to what a program opens
itself (``python3 -c "open('.env')"``), which only the sandbox hides."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams.sandbox import UnsafeHostSandbox
from agentscope_teams.tools import PermissionEngine, parse_rule, shell_tools

BASH = shell_tools(UnsafeHostSandbox())[0]


def check(command: str, workspace: Path, rule: str = "Read(.env)") -> tuple[str, str]:
    engine = PermissionEngine([parse_rule(rule, "deny")], mode="bypass")
    decision = engine.check(BASH, {"command": command}, workspace=workspace)
    return decision.behavior, decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "cat .env",
        "cat a.txt .env",
        "head -n 3 app/.env",
        "sudo tail -f ./.env",
        "bash -c 'sed -n 1p .env'",
        "grep -r KEY .env",
        "sort .env | uniq",
        "cp .env /tmp/x",
        "cat -- .env",
    ],
)
def test_a_recognized_file_command_reading_a_denied_path_is_denied(
    tmp_path: Path, command: str
) -> None:
    behavior, reason = check(command, tmp_path)
    assert behavior == "deny", (command, reason)
    assert "Read(.env)" in reason and ".env" in reason


@pytest.mark.parametrize(
    "command",
    [
        "cat a.txt",
        "grep .env a.txt",  # the pattern, not a file
        "sed -n s/.env/x/p a.txt",
        "echo .env",
        "python3 -c \"print(open('.env').read())\"",  # a program's own opens: out of sight
    ],
)
def test_other_commands_are_not_denied_by_a_read_rule(tmp_path: Path, command: str) -> None:
    assert check(command, tmp_path)[0] == "allow", command


def test_directory_and_absolute_forms(tmp_path: Path) -> None:
    assert check("cat secrets/key", tmp_path, "Read(secrets/**)")[0] == "deny"
    assert check(f"cat {tmp_path}/secrets/key", tmp_path, "Read(secrets/**)")[0] == "deny"
    assert check("cat ~/.ssh/id_rsa", tmp_path, "Read(~/.ssh/**)")[0] == "deny"
    assert check("cat other/key", tmp_path, "Read(secrets/**)")[0] == "allow"


def test_an_input_redirection_from_a_denied_file_is_denied(tmp_path: Path) -> None:
    assert check("wc -l < .env", tmp_path)[0] == "deny"
    assert check("wc -l < a.txt", tmp_path)[0] == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "echo x > docs/a.md",
        "echo x >> docs/a.md",
        "sed -i s/a/b/ docs/a.md",
        "sed -i -e s/a/b/ docs/a.md",
        "printf x | tee docs/a.md",
        "rm docs/a.md",
        "mv docs/a.md a.md",
        "cp a.md docs/a.md",
        "touch docs/new.md",
        "dd if=a.md of=docs/a.md",
        "sudo bash -c 'echo x > docs/a.md'",
    ],
)
def test_a_recognized_command_changing_an_edit_denied_path_is_denied(
    tmp_path: Path, command: str
) -> None:
    behavior, reason = check(command, tmp_path, "Edit(docs/**)")
    assert behavior == "deny", (command, reason)
    assert "Edit(docs/**)" in reason and "changes docs/" in reason


@pytest.mark.parametrize(
    "command",
    ["cat docs/a.md", "sed s/a/b/ docs/a.md", "echo x > notes.md", "cp docs/a.md b.md", "ls docs"],
)
def test_reading_or_changing_other_files_is_not_denied_by_an_edit_rule(
    tmp_path: Path, command: str
) -> None:
    assert check(command, tmp_path, "Edit(docs/**)")[0] == "allow", command
