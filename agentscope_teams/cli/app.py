"""The parser, the global options and the error handling of ``agentscope-teams``.

To add a command, write a module with ``register(subparsers)`` (see :mod:`.common`) and list it in
:data:`COMMAND_MODULES`. Exit codes (see :mod:`.exits`): 0 success, 1 a command failed (one ``error: ...`` line on stderr,
whatever the exception; ``--debug`` adds the traceback), 2 a usage error (argparse), 130 interrupted
(Ctrl-C), 141 stdout closed by its reader (``| head``), quietly.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol, cast

from .._version import __version__
from ..tracing.setup import configure_from_env, shutdown
from .common import Handler, SubParsers, add_global_options, check_store_given, debug_enabled
from .exits import EXIT_FAILED, EXIT_OK, error_message, failure, guarded_stdout, stdout_closed

__all__ = ["COMMAND_MODULES", "build_parser", "error_message", "main"]


class CommandModule(Protocol):
    """A module that adds its subcommand(s) to the parser."""

    def register(self, subparsers: SubParsers) -> None: ...


#: Every command group, in the order ``--help`` lists them, and the module (in this package) that
#: registers it. A command line naming one command imports only its module (see :func:`main`).
COMMAND_MODULES: dict[str, str] = {
    "review": "review_cmd",
    "run": "run_cmd",
    "specs": "specs_cmd",
    "trust": "trust_cmd",
    "sessions": "sessions_cmd",
    "team": "team_cmd",
    "worker": "worker_cmd",
    "serve": "serve_cmd",
    "mcp-serve": "mcp_serve_cmd",
}

#: The options accepted before the command that take a value (see :func:`.common.add_global_options`).
_GLOBAL_VALUED = frozenset({"--store"})

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


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The ``agentscope-teams`` parser with ``commands`` (names of :data:`COMMAND_MODULES`),
    by default every command."""
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
    for name in COMMAND_MODULES if commands is None else commands:
        module = importlib.import_module(f".{COMMAND_MODULES[name]}", __package__)
        cast(CommandModule, module).register(subparsers)
    return parser


def commands_needed(argv: Sequence[str]) -> tuple[str, ...] | None:
    """The commands the parser needs for ``argv``: none for ``--version``, the one it names when
    its first word after the global options is a command, else None (every command: top-level
    help, or a usage error listing them)."""
    words = iter(argv)
    for word in words:
        if word in _GLOBAL_VALUED:
            next(words, None)
        elif word == "--version":
            return ()
        elif word in ("-h", "--help", "--"):
            return None
        elif not word.startswith("-"):
            return (word,) if word in COMMAND_MODULES else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line and return its exit code (the console script exits with it).

    Every command goes through here: any exception becomes an exit code and at most one line on
    stderr (see :mod:`.exits`).
    """
    with guarded_stdout() as stdout:
        args: argparse.Namespace | None = None
        try:
            try:
                words = sys.argv[1:] if argv is None else argv
                parser = build_parser(commands_needed(words))  # imports only what argv needs
                args = parser.parse_args(words)
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
