"""``agentscope-teams run --specs DIR "prompt"``: one turn of a lead agent with subagents.

The handler is a placeholder until the run feature lands: replace :func:`handle` (the options
below are the command's full interface).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import (
    SubParsers,
    add_command,
    add_identity_options,
    add_json_option,
    not_available,
)

EXAMPLES = (
    'agentscope-teams run --specs specs/ "Review src/ for security problems"',
    'agentscope-teams run --specs specs/ --session s1 --user alice "Continue the review"',
)


def register(subparsers: SubParsers) -> None:
    parser = add_command(
        subparsers,
        "run",
        help="run a lead agent on a prompt, with the subagents of a spec directory",
        description="Run a lead agent on PROMPT; the subagents in --specs are available to it "
        "through agent_spawn. The session is stored, so the same --session continues later.",
        examples=EXAMPLES,
    )
    parser.add_argument("prompt", metavar="PROMPT", help="the user message")
    parser.add_argument(
        "--specs", metavar="DIR", type=Path, default=Path("specs"), help="subagent spec directory"
    )
    parser.add_argument("--model", metavar="MODEL", help="model, e.g. openai:gpt-4o")
    parser.add_argument(
        "--session", metavar="SESSION", help="session id to continue (default: a new session)"
    )
    add_identity_options(parser)
    add_json_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    return not_available("run")
