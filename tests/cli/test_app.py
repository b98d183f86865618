"""Global behaviour of the console script: version, help, usage errors, error lines, exit codes."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from agentscope_teams import __version__
from agentscope_teams.cli import app, main, sessions_cmd
from agentscope_teams.errors import SpecError

from .conftest import Cli, one_error_line

COMMANDS = [
    ["review"],
    ["run"],
    ["specs"],
    ["specs", "check"],
    ["sessions"],
    ["sessions", "list"],
    ["sessions", "show"],
    ["sessions", "clear"],
    ["sessions", "delete"],
    ["team"],
    ["team", "list"],
    ["team", "show"],
    ["team", "tasks"],
    ["team", "messages"],
    ["worker"],
]


def test_version(cli: Cli) -> None:
    result = cli.run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"agentscope-teams {__version__}"


def test_help_lists_commands_and_examples(cli: Cli) -> None:
    result = cli.run("--help")
    assert result.returncode == 0, result.stderr
    for command in ("review", "run", "specs", "sessions", "team", "worker"):
        assert f"    {command} " in result.stdout
    assert "examples:" in result.stdout
    assert "agentscope-teams review examples/sample_project" in result.stdout
    assert "agentscope-teams specs check specs/" in result.stdout
    assert "agentscope-teams sessions list --user alice" in result.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_examples(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"usage: agentscope-teams {' '.join(command)}" in out
    assert "examples:\n  agentscope-teams " + command[0] in out
    assert "--store URL" in out


def test_unknown_command_is_a_usage_error(cli: Cli) -> None:
    result = cli.run("frobnicate")
    assert result.returncode == 2
    assert "invalid choice: 'frobnicate'" in result.stderr
    assert result.stdout == ""


def test_missing_subcommand_and_bad_option_are_usage_errors(cli: Cli) -> None:
    assert cli.run("sessions").returncode == 2
    assert cli("sessions", "list", "--frob").returncode == 2
    assert cli.run().returncode == 2


def test_store_option_before_or_after_the_command(cli: Cli) -> None:
    after = cli.run("sessions", "list", "--store", cli.url)
    before = cli.run("--store", cli.url, "sessions", "list")
    for result in (after, before):
        assert result.returncode == 0, result.stderr
        assert f"no sessions for the anonymous user in store {cli.url}" in result.stdout


def test_default_store_comes_from_the_environment(cli: Cli) -> None:
    result = cli.run("sessions", "list", AGENTSCOPE_TEAMS_STORE=cli.url)
    assert result.returncode == 0, result.stderr
    assert f"in store {cli.url}" in result.stdout
    default = cli.run("sessions", "list")
    assert default.returncode == 0, default.stderr
    assert f"in store file://{cli.tmp_path / 'home' / '.agentscope_teams' / 'store'}" in (
        default.stdout
    )


def test_bad_store_url_is_one_error_line(cli: Cli) -> None:
    result = cli.run("sessions", "list", "--store", "ftp://user:secret@host/x")
    assert result.returncode == 1
    line = one_error_line(result)
    assert "unsupported store URL" in line and "secret" not in line


def test_run_without_a_model_is_one_error_line(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    result = cli("run", "hello")
    assert result.returncode == 1
    assert "run needs a model" in one_error_line(result)


def test_worker_requires_an_explicit_store(cli: Cli) -> None:
    missing = cli.run("worker")
    assert missing.returncode == 2
    assert "--store URL is required" in missing.stderr
    given = cli("worker", "--max-members", "0")
    assert given.returncode == 1
    assert "max_members must be >= 1" in one_error_line(given)


def test_debug_shows_the_traceback(cli: Cli) -> None:
    plain = cli("sessions", "show", "nope", "--agent", "lead")
    assert plain.returncode == 1
    one_error_line(plain)
    debug = cli("--debug", "sessions", "show", "nope", "--agent", "lead")
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr
    assert "CommandError" in debug.stderr
    assert debug.stderr.splitlines()[-1] == plain.stderr.strip()


def test_interrupt_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(sessions_cmd, "with_store", interrupted)
    assert main(["sessions", "list", "--store", "memory://"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "interrupted"


def test_errors_inside_task_groups_are_unwrapped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def failing(*args: object) -> int:
        error = SpecError("specs/x.md", 3, "bad\nthing")
        raise ExceptionGroup("task group", [ExceptionGroup("inner", [error])])

    monkeypatch.setattr(sessions_cmd, "with_store", failing)
    assert main(["sessions", "list", "--store", "memory://"]) == 1
    assert capsys.readouterr().err == "error: specs/x.md:3: bad; thing\n"


def test_key_error_message_has_no_quotes() -> None:
    assert app.error_message(KeyError("session 's' does not exist")) == "session 's' does not exist"


def _command_names(parser: argparse.ArgumentParser) -> list[str]:
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(commands.choices)


def test_each_command_module_registers_the_command_it_is_listed_under() -> None:
    """``main`` imports only the module of the command it is given, found in ``COMMAND_MODULES``."""
    assert _command_names(app.build_parser()) == list(app.COMMAND_MODULES)
    for name in app.COMMAND_MODULES:
        assert _command_names(app.build_parser([name])) == [name]


@pytest.mark.parametrize(
    ("argv", "needed"),
    [
        (["--version"], ()),
        (["--store", "memory://", "--version"], ()),
        (["sessions", "list"], ("sessions",)),
        (["--store", "memory://", "--debug", "team", "list"], ("team",)),
        (["--store=memory://", "run", "hi"], ("run",)),
        (["mcp-serve", "--help"], ("mcp-serve",)),
        (["--store", "run"], None),  # the store's value, not a command
        (["--help", "run"], None),
        (["frobnicate"], None),
        ([], None),
    ],
)
def test_the_parser_gets_the_commands_the_command_line_needs(
    argv: list[str], needed: tuple[str, ...] | None
) -> None:
    assert app.commands_needed(argv) == needed


def test_a_command_imports_neither_the_agents_nor_the_other_commands() -> None:
    code = (
        "import sys\n"
        "from agentscope_teams.cli import main\n"
        "main(['--store', 'memory://', 'sessions', 'list'])\n"
        "print(sorted(m for m in ('agentscope_teams.agent', 'agentscope_teams.teams', "
        "'agentscope_teams.cli.run_cmd', 'agentscope_teams.cli.serve_cmd') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]", done.stdout + done.stderr


def test_a_multi_line_message_is_one_line_whose_introducing_colon_is_kept() -> None:
    exc = ValueError("specs: 2 problems; fix each one:\n a.md:1: bad\n\n b.md:2: worse\n")
    assert app.error_message(exc) == "specs: 2 problems; fix each one: a.md:1: bad; b.md:2: worse"


def test_a_validation_error_is_its_problems_without_pydantic_s_types_and_links() -> None:
    from agentscope_teams import RuntimeContext

    with pytest.raises(ValueError) as caught:
        RuntimeContext(session_id="s", user_id="")
    message = app.error_message(caught.value)
    assert message == "invalid RuntimeContext: user_id must be 1-256 characters long, got 0"
