"""``agentscope-teams review PATH``: run the example code-review team on a directory.

The handler is a placeholder until the review feature lands: replace :func:`handle` (the options
below are the command's full interface).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import SubParsers, add_command, add_json_option, not_available

EXAMPLES = (
    "agentscope-teams review examples/sample_project",
    "agentscope-teams review src/ --output review.md --workers 3",
    "agentscope-teams review src/ --model openai:gpt-4o --store sqlite:///review.db",
)


def register(subparsers: SubParsers) -> None:
    parser = add_command(
        subparsers,
        "review",
        help="run the code-review team on a directory and write a Markdown report",
        description="Run the example code-review team on PATH and write a Markdown report, with "
        "live progress (task board, messages) in the terminal. Without an API key or --model it "
        "uses the deterministic offline model (no LLM).",
        examples=EXAMPLES,
    )
    parser.add_argument("path", metavar="PATH", type=Path, help="directory to review")
    parser.add_argument(
        "--model", metavar="MODEL", help="model, e.g. openai:gpt-4o (default: offline model)"
    )
    parser.add_argument(
        "--workers", metavar="N", type=int, default=3, help="number of reviewer members"
    )
    parser.add_argument(
        "--output",
        metavar="FILE",
        type=Path,
        default=Path("review.md"),
        help="where to write the report (default review.md)",
    )
    parser.add_argument(
        "--timeout", metavar="SECONDS", type=float, default=600.0, help="give up after SECONDS"
    )
    add_json_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    return not_available("review")
