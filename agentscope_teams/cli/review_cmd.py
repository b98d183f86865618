"""``agentscope-teams review PATH``: run the example code-review team on a directory.

The lead (``agentscope_teams/review/lead_prompt.md``) lists the Python files, builds a team of the
reviewer specs (``--specs``, default: the specs shipped with the package), shares the files out as
tasks, waits for the team and answers with the report, written to ``--output``. Without ``--model``
and without an API key in the environment the team runs on the ``"offline"`` model
(:class:`~agentscope_teams.review.offline_model.OfflineReviewModel`):
deterministic static analysis driving the same tools, not an LLM, and the output says so.
With ``--changed-since REF`` only the Python files changed since REF are reviewed: the lead reads
the diff through the git MCP server (:mod:`.review_changes`).
``--resume`` continues an interrupted review from the store (:mod:`.review_resume`).
``--trust-project`` trusts the project of ``--specs`` (and remembers it), so the ``--workers``
processes enable its own MCP servers (:mod:`.trust_cmd`).
``--max-tokens`` / ``--max-budget-usd`` are the whole review's budget and ``--rate-limit`` the
model's shared limit (:mod:`.usage_option`); a spent budget stops the review with what was found
so far (:mod:`.review_budget`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import anyio
from rich.console import Console

from ..model import ChatModel, model_from_string
from ..review.offline_files import skipped_dir
from ..review.offline_lead import SPECS_DIR
from ..review.offline_model import OfflineReviewModel
from ..tracing import metering
from .common import (
    CommandError,
    SubParsers,
    add_command,
    add_json_option,
    open_store,
    path_argument,
    print_json_line,
    store_url,
    text_argument,
)
from .exits import OutputConsole
from .review_budget import stopped_error
from .review_changes import changed_since
from .review_resume import ReviewRecord, check_resumable, find_interrupted
from .review_run import ReviewConfig, run_review
from .review_view import JsonView, LiveView, ReviewView
from .trust_cmd import add_trust_option, project_trust
from .usage_option import UsageOptions, add_usage_options, usage_options
from .usage_view import usage_json, usage_lines

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "review"
LEAD_PROMPT = PACKAGE_DIR / "lead_prompt.md"
DEFAULT_SPECS = SPECS_DIR
#: ``--model offline`` picks the offline model (registered by that name) even when an API key is set.
OFFLINE = "offline"
LATEST = "latest"
KEY_DEFAULTS = (
    ("DASHSCOPE_API_KEY", "dashscope:qwen-plus"),
    ("OPENAI_API_KEY", "openai:gpt-4o-mini"),
)

EXAMPLES = (
    "agentscope-teams review examples/sample_project",
    "agentscope-teams review src/ --output review.md --json",
    "agentscope-teams review src/ --workers 2 --store sqlite:///./review.db",
    "agentscope-teams review src/ --model openai:gpt-4o --store sqlite:///./review.db",
    "agentscope-teams review src/ --changed-since main",
    "agentscope-teams review --resume --store sqlite:///./review.db",
    "agentscope-teams review src/ --workers 2 --store sqlite:///./review.db --max-tokens 200000 "
    "--rate-limit 'rpm=60'",
)
#: What the review's budget covers (the help of --max-tokens and --max-budget-usd).
BUDGET_SCOPE = "the whole review"
BUDGET_NOTE = (
    "The lead's calls and every member's, in this process and in the --workers processes, count "
    "on one budget (the lead session's) that --resume continues; given again with --resume, a "
    "budget replaces the one the review started with. When it is spent the review stops: the "
    "report holds what was found so far, the output names the budget and by how much, and the "
    "exit code is 1. The rate limit applies to the lead and to every member."
)


def register(subparsers: SubParsers) -> None:
    parser = add_command(
        subparsers,
        "review",
        help="run the code-review team on a directory and write a Markdown report",
        description="Run the example code-review team on PATH and write a Markdown report, with "
        "live progress (task board, messages) in the terminal. Without an API key "
        "(DASHSCOPE_API_KEY, OPENAI_API_KEY) or --model it uses the deterministic offline model "
        "(static analysis, no LLM). A directory without Python files is an error (exit code 1): "
        "there is nothing to review. A review stopped by its budget (--max-tokens, "
        "--max-budget-usd) writes the report of what was found so far and exits 1 with an "
        "'error:' line naming the budget; --resume with a larger budget continues it.",
        examples=EXAMPLES,
    )
    _add_what_options(parser)
    _add_run_options(parser)
    add_trust_option(parser)
    add_usage_options(parser, BUDGET_SCOPE, BUDGET_NOTE)
    add_json_option(parser)
    parser.set_defaults(handler=handle)


def _add_what_options(parser: argparse.ArgumentParser) -> None:
    """What to review: the directory, or the review to resume, and since which git ref."""
    parser.add_argument(
        "path",
        metavar="PATH",
        type=path_argument,
        nargs="?",
        help="directory to review (not with --resume)",
    )
    parser.add_argument(
        "--resume",
        metavar="SESSION",
        nargs="?",
        const=LATEST,
        type=text_argument,
        help="continue an interrupted review (or one its budget stopped) from the store (the "
        "latest unfinished one, or the one whose lead session is SESSION); its directory, report "
        "path, model, specs, budget and rate limit are those it started with unless given again",
    )
    parser.add_argument(
        "--changed-since",
        metavar="REF",
        type=text_argument,
        help="review only the Python files changed since the git ref REF (a branch, tag or "
        "commit); the lead reads the diff through the git MCP server (needs the mcp extra and "
        "mcp-server-git)",
    )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """How to run it: model, workers, specs, report path, timeout."""
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help="model, e.g. openai:gpt-4o, or 'offline' (default: dashscope:qwen-plus with "
        "DASHSCOPE_API_KEY, openai:gpt-4o-mini with OPENAI_API_KEY, else offline)",
    )
    parser.add_argument(
        "--workers",
        metavar="N",
        type=int,
        default=0,
        help="run the members in N `agentscope-teams worker` processes instead of in this one "
        "(needs a store shared across processes: file, sqlite, SQL or Redis)",
    )
    parser.add_argument(
        "--specs",
        metavar="DIR",
        type=path_argument,
        default=None,
        help="reviewer spec directory (default: the specs shipped with the package)",
    )
    parser.add_argument(
        "--output",
        metavar="FILE",
        type=path_argument,
        default=None,
        help="where to write the report (default review.md in the current directory)",
    )
    parser.add_argument(
        "--timeout", metavar="SECONDS", type=float, default=600.0, help="give up after SECONDS"
    )


def choose_model(name: str | None, env: dict[str, str] | None = None) -> tuple[str, ChatModel]:
    """The model string and model of the run: ``--model``, else by API key, else offline."""
    env = dict(os.environ) if env is None else env
    if name is None:
        name = next((model for var, model in KEY_DEFAULTS if env.get(var)), OFFLINE)
    name = name.strip()
    return name, model_from_string(name)


def _config(args: argparse.Namespace) -> ReviewConfig:
    if args.path is None:
        raise CommandError("pass the directory to review (or --resume to continue one)")
    path: Path = args.path
    if not path.is_dir():
        raise CommandError(f"{path} is not a directory; pass the directory to review")
    if not has_python_files(path):
        raise CommandError(
            f"nothing to review: {path} has no Python files (hidden directories, virtualenvs and "
            "site-packages are skipped); pass a directory that contains Python code"
        )
    specs: Path = args.specs or DEFAULT_SPECS
    return _build(args, path.resolve(), path.as_posix(), specs, args.output or Path("review.md"))


def _usage(args: argparse.Namespace, record: ReviewRecord | None) -> UsageOptions:
    """The budget and rate limit of the options (taking a ``?query`` off ``--model``); on
    ``--resume``, those the review started with where none is given again."""
    given = usage_options(args)
    if record is None:
        return given
    return UsageOptions(given.budget or record.budget, given.rate_limit or record.rate_limit)


def _build(
    args: argparse.Namespace,
    path: Path,
    target: str,
    specs: Path,
    output: Path,
    record: ReviewRecord | None = None,
) -> ReviewConfig:
    usage = _usage(args, record)
    if args.workers < 0:
        raise CommandError(f"--workers must be 0 or more, got {args.workers}")
    if not args.timeout > 0:
        raise CommandError(f"--timeout must be more than 0 seconds, got {args.timeout:g}")
    if not (specs / "reviewer.md").is_file():
        raise CommandError(f"{specs} has no reviewer.md; pass a spec directory with --specs")
    _check_output(output)
    project_trust(args, specs)  # --trust-project: remembered, so the --workers processes see it
    name, model = choose_model(args.model)
    changes = changed_since(path.resolve(), args.changed_since) if args.changed_since else None
    return ReviewConfig(
        path=path,
        target=target,
        model=model,
        model_arg=name,
        offline=isinstance(model, OfflineReviewModel),
        store_url=store_url(args),
        specs=specs.resolve(),
        workers=args.workers,
        output=output,
        timeout=args.timeout,
        prompt=LEAD_PROMPT.read_text(encoding="utf-8"),
        changes=changes,
        usage=usage,
    )


def _check_output(output: Path) -> None:
    """Refuse a report path that cannot be written before the review runs, not after."""
    if output.is_dir():
        raise CommandError(f"--output {output} is a directory; pass the report's file path")
    if not output.parent.is_dir():
        raise CommandError(
            f"--output {output}: the directory {output.parent} does not exist; create it or "
            "pass another path"
        )


async def _resumed_config(args: argparse.Namespace) -> ReviewConfig:
    """The config of the interrupted review ``--resume`` names, with the options given again."""
    if args.path is not None:
        raise CommandError("--resume continues a review from the store: pass no PATH with it")
    session = None if args.resume == LATEST else args.resume
    async with open_store(store_url(args)) as store:
        found = await find_interrupted(store, session)
    record = found.record
    check_resumable(record)
    args.model = args.model or record.model
    args.changed_since = args.changed_since or record.changed_since
    specs = args.specs or Path(record.specs)
    output = args.output or Path(record.output)
    cfg = _build(args, Path(record.path), record.target, specs, output, record)
    cfg.resume = found
    return cfg


def has_python_files(root: Path) -> bool:
    """Whether ``root`` holds a Python file the review would look at (the lead's own rule:
    :func:`~agentscope_teams.review.offline_files.skipped_dir`)."""
    for _, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not skipped_dir(d)]
        if any(name.endswith(".py") for name in files):
            return True
    return False


def handle(args: argparse.Namespace) -> int:
    cfg = anyio.run(_resumed_config, args) if args.resume else _config(args)
    view: ReviewView = JsonView() if args.json else LiveView(_console())
    try:
        with metering() as meter:
            summary = anyio.run(run_review, cfg, view)
        if args.json:  # before review_end, which stays the last line
            print_json_line(usage_json(meter))
        view.finish(summary)
    finally:
        view.close()
    if not args.json:
        print("\n".join(usage_lines(meter)))
    if summary.budget_stop is not None:  # the report is written: exit 1, the budget named
        raise stopped_error(summary)
    return 0


def _console() -> Console:
    return OutputConsole(highlight=False)
