"""The parser, the global options and the error handling of ``agentscope-teams``.

To add a command, write a module with ``register(subparsers)`` (see :mod:`.common`) and list it in
:data:`COMMAND_MODULES`. Exit codes (see :mod:`.exits`): 0 success, 1 a command failed (one ``error: ...`` line on stderr,
whatever the exception; ``--debug`` adds the traceback), 2 a usage error (argparse), 130 interrupted
(Ctrl-C), 141 stdout closed by its reader (``| head``), quietly.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Sequence
from typing import Protocol

from .._version import __version__
from ..tracing.setup import configure_from_env, shutdown
from . import (
    mcp_serve_cmd,
    review_cmd,
    run_cmd,
    serve_cmd,
    sessions_cmd,
    specs_cmd,
    team_cmd,
    trust_cmd,
    worker_cmd,
)
from .common import Handler, SubParsers, add_global_options, check_store_given, debug_enabled
from .exits import EXIT_FAILED, EXIT_OK, error_message, failure, guarded_stdout, stdout_closed

__all__ = ["COMMAND_MODULES", "build_parser", "error_message", "main"]


class CommandModule(Protocol):
    """A module that adds its subcommand(s) to the parser."""

    def register(self, subparsers: SubParsers) -> None: ...


#: Every command group, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[CommandModule, ...] = (
    review_cmd,
    run_cmd,
    specs_cmd,
    trust_cmd,
    sessions_cmd,
    team_cmd,
    worker_cmd,
    serve_cmd,
    mcp_serve_cmd,
)

#: The commands that run agents, traced when ``OTEL_*`` variables ask for it.
TRACED_COMMANDS = frozenset({"review", "run", "worker", "serve", "mcp-serve"})

_DESCRIPTION = """\
Stateless multi-agent LLM applications over a pluggable store: subagents and agent teams whose
state (sessions, task boards, mailboxes) lives in the store named by --store."""

_EXAMPLES = """\
examples:
  agentscope-teams review examples/sample_project
  agentscope-teams run --specs specs/ "Review src/ for security problems"
  agentscope-teams specs check specs/
  agentscope-teams trust add ~/src/some-project
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
    """Run one command line and return its exit code (the console script exits with it).

    Every command goes through here: any exception becomes an exit code and at most one line on
    stderr (see :mod:`.exits`).
    """
    with guarded_stdout() as stdout:
        args: argparse.Namespace | None = None
        try:
            try:
                parser = build_parser()
                args = parser.parse_args(argv)
                check_store_given(args)
                handler: Handler = args.handler
                with traced(args.command):
                    code = handler(args)
            except SystemExit as exc:  # argparse: --help, --version, usage errors
                code = _exit_code(exc)
            sys.stdout.flush()  # a closed stdout is noticed here, not at interpreter exit
        except BaseException as exc:
            return failure(exc, debug_enabled(args), getattr(args, "command", None))
        return stdout_closed() if stdout.closed_by_reader else code


@contextlib.contextmanager
def traced(command: str) -> Iterator[None]:
    """For the commands that run agents, an OpenTelemetry SDK set up from ``OTEL_*`` variables
    (when installed and asked for), flushed when the command ends."""
    provider = configure_from_env() if command in TRACED_COMMANDS else None
    try:
        yield
    finally:
        shutdown(provider)


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return EXIT_OK
    return exc.code if isinstance(exc.code, int) else EXIT_FAILED
