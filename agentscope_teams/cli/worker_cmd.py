"""``agentscope-teams worker --store URL``: run team member loops taken from a shared store.

The handler is a placeholder until the worker feature lands: replace :func:`handle` (the options
below are the command's full interface).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import SubParsers, add_command, not_available

EXAMPLES = (
    "agentscope-teams worker --store redis://localhost:6379/0",
    "agentscope-teams worker --store postgresql://app@db/teams --max-members 8 --specs specs/",
)


def register(subparsers: SubParsers) -> None:
    parser = add_command(
        subparsers,
        "worker",
        help="run team members in this process, taking them and their tasks from the store",
        description="Run member loops of teams in other processes or hosts: the worker takes "
        "members and tasks from the shared store named by --store (required; a store shared "
        "across processes, e.g. Redis, SQL or a file store on this host).",
        examples=EXAMPLES,
        store_required=True,
    )
    parser.add_argument("--model", metavar="MODEL", help="model, e.g. openai:gpt-4o")
    parser.add_argument(
        "--specs", metavar="DIR", type=Path, default=Path("specs"), help="subagent spec directory"
    )
    parser.add_argument(
        "--max-members",
        metavar="N",
        type=int,
        default=4,
        help="members this worker runs at once (default 4)",
    )
    parser.add_argument(
        "--poll",
        metavar="SECONDS",
        type=float,
        default=1.0,
        help="seconds between looks for new members and tasks (default 1)",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    return not_available("worker")
