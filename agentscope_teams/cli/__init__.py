"""The ``agentscope-teams`` command line: a thin shell over the library (argparse + rich).

``main(argv)`` parses, runs one command and returns its exit code (0 success, 1 error, 2 usage,
130 interrupted); the console script passes that code to ``sys.exit``. Commands live in one module
each (``specs_cmd``, ``sessions_cmd``, ``team_cmd``, ``review_cmd``, ``run_cmd``, ``worker_cmd``) and
are listed in :data:`agentscope_teams.cli.app.COMMAND_MODULES`.
"""

from __future__ import annotations

from .app import build_parser, main

__all__ = ["build_parser", "main"]
