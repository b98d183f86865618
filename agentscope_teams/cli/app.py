"""The parser, the global options and the error handling of ``agentscope-teams``.

To add a command, write a module with ``register(subparsers)`` (see :mod:`.common`) and list it in
:data:`COMMAND_MODULES`. Exit codes: 0 success, 1 a command failed (one ``error: ...`` line on
stderr; ``--debug`` adds the traceback), 2 a usage error (argparse), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Protocol

from rich.console import Console
from rich.text import Text

from .._version import __version__
from ..errors import AgentScopeTeamsError
from . import review_cmd, run_cmd, serve_cmd, sessions_cmd, specs_cmd, team_cmd, worker_cmd
from .common import Handler, SubParsers, add_global_options, check_store_given, debug_enabled


class CommandModule(Protocol):
    """A module that adds its subcommand(s) to the parser."""

    def register(self, subparsers: SubParsers) -> None: ...


#: Every command group, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[CommandModule, ...] = (
    review_cmd,
    run_cmd,
    specs_cmd,
    sessions_cmd,
    team_cmd,
    worker_cmd,
    serve_cmd,
)

#: Errors reported as one line; anything else is a bug and keeps its traceback.
REPORTED_ERRORS = (AgentScopeTeamsError, ValueError, KeyError, OSError)

_DESCRIPTION = """\
Stateless multi-agent LLM applications over a pluggable store: subagents and agent teams whose
state (sessions, task boards, mailboxes) lives in the store named by --store."""

_EXAMPLES = """\
examples:
  agentscope-teams review examples/sample_project
  agentscope-teams run --specs specs/ "Review src/ for security problems"
  agentscope-teams specs check specs/
  agentscope-teams sessions list --user alice
  agentscope-teams sessions show SESSION --agent reviewer --user alice
  agentscope-teams team tasks TEAM --user alice
  agentscope-teams --store redis://localhost:6379/0 worker

Every command takes --store URL (default $AGENTSCOPE_TEAMS_STORE, else
file://~/.agentscope_teams/store). Run `agentscope-teams COMMAND --help` for its options."""


def build_parser() -> argparse.ArgumentParser:
    """The complete ``agentscope-teams`` parser, with every registered command."""
    parser = argparse.ArgumentParser(
        prog="agentscope-teams",
        description=_DESCRIPTION,
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agentscope-teams {__version__}")
    add_global_options(parser)
    subparsers = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", required=True
    )
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line and return its exit code (the console script exits with it)."""
    parser = build_parser()
    args: argparse.Namespace | None = None
    try:
        args = parser.parse_args(argv)
        check_store_given(args)
        handler: Handler = args.handler
        return handler(args)
    except SystemExit as exc:  # argparse: --help, --version, usage errors
        return _exit_code(exc)
    except KeyboardInterrupt:
        _print_error(Text("interrupted", style="yellow"))
        return 130
    except BrokenPipeError:  # `agentscope-teams ... | head`: stop quietly
        _silence_stdout()
        return 1
    except REPORTED_ERRORS as exc:
        return _report(exc, debug_enabled(args))
    except BaseExceptionGroup as group:
        leaf = _single_leaf(group)
        if isinstance(leaf, KeyboardInterrupt):
            _print_error(Text("interrupted", style="yellow"))
            return 130
        if isinstance(leaf, REPORTED_ERRORS):
            return _report(leaf, debug_enabled(args))
        raise


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


def _single_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The only exception inside nested single-exception groups (task groups wrap errors)."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def error_message(exc: BaseException) -> str:
    """The exception's message on one line (``KeyError`` without its quotes)."""
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        text = exc.args[0]
    else:
        text = str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return "; ".join(lines) or type(exc).__name__


def _report(exc: BaseException, debug: bool) -> int:
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    _print_error(Text("error: ", style="bold red").append(error_message(exc)))
    return 1


def _print_error(text: Text) -> None:
    Console(stderr=True, soft_wrap=True, highlight=False).print(text)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
