"""``review --max-tokens``: one budget for the whole review (the lead's calls and every member's,
in this process and in ``--workers`` processes), which stops it cleanly when spent: the report is
written with what was found so far and names the budget, the exit code is 1 with an ``error:``
line naming it, and ``--resume`` continues on the same ledger (with a larger budget, to the end).

The model is the offline review model with each call's reported tokens logged (:mod:`.review_calls`),
so the ledger's count is checked against the calls the model really answered."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from agentscope_teams.cli.review_resume import LEAD
from agentscope_teams.sessions import SessionStorage
from agentscope_teams.store import store_from_url
from agentscope_teams.usage.backend import usage_backend

from .conftest import REPO, Cli
from .review_calls import LOG_ENV

SAMPLE = REPO / "examples" / "sample_project"
MODEL = "python:tests.cli.review_calls:model"
#: The sample project's whole review uses about 460,000 tokens (offline model).
WHOLE = 10_000_000
BUDGET_NAME = re.compile(r"stopped by budget (session://review-[0-9a-f]+): ")


@dataclass
class Review:
    """One ``review`` command: its outcome, the report, and the tokens of each model call."""

    done: Any
    report: Path
    calls: list[int]

    @property
    def error(self) -> str:
        return self.done.stderr.splitlines()[-1] if self.done.stderr else ""


def review(cli: Cli, url: str, *args: str) -> Review:
    project = cli.tmp_path / "project"
    if not project.exists():
        shutil.copytree(SAMPLE, project)
    report, log = cli.tmp_path / "review.md", cli.tmp_path / "calls.log"
    where = [] if "--resume" in args else [str(project), "--output", str(report)]
    done = cli.run(
        "review", *where, "--store", url, "--model", MODEL, *args,
        PYTHONPATH=str(REPO), **{LOG_ENV: str(log)},
    )  # fmt: skip
    calls = [int(n) for n in log.read_text().split()] if log.exists() else []
    return Review(done, report, calls)


def ledger(url: str, budget: str) -> int:
    """The tokens the store's ledger counts on ``budget`` (settled calls)."""

    async def read() -> int:
        async with store_from_url(url) as store:
            doc = await usage_backend(store).read(budget)
        return int(doc["ut"]) if doc else 0

    return anyio.run(read)


def lead_tokens(url: str, session: str) -> int:
    """The tokens the lead's own calls used (its session's reported usage)."""

    async def read() -> int:
        async with store_from_url(url) as store:
            found = await SessionStorage(store).get_session(None, LEAD, session)
        assert found is not None
        return found.state.usage.total_tokens

    return anyio.run(read)


def test_a_spent_budget_stops_the_review_with_its_report_and_exit_1(cli: Cli) -> None:
    url, limit = f"sqlite:///{cli.tmp_path / 'store.db'}", 20_000
    run = review(cli, url, "--max-tokens", str(limit), "--json")
    assert run.done.returncode == 1, run.done.stderr
    events = [json.loads(line) for line in run.done.stdout.splitlines()]
    stop, end = events[-2], events[-1]
    assert stop["type"] == "budget_stop" and stop["unit"] == "tokens"
    assert stop["budget"].startswith("session://review-") and stop["limit"] == limit
    assert stop["over"] == stop["used"] - limit >= 0
    assert end["type"] == "review_end" and end["budget_stop"] == {
        k: v for k, v in stop.items() if k != "type"
    }
    # the error line names the budget, how far over it is, where the report is, how to go on
    assert run.error.startswith(
        f"error: the review of {end['target']} stopped by budget {stop['budget']}: "
    )
    assert f"{stop['used']:,.0f} tokens used of {limit:,} tokens" in run.error
    assert (
        str(run.report) in run.error and f"--resume {end['session_id']} --max-tokens N" in run.error
    )
    text = run.report.read_text()
    assert f"**The review stopped by budget {stop['budget']}: " in text
    assert "## Not fully reviewed" in text and end["unfinished"]
    # one ledger: spent, and past the limit by at most one call's usage
    used = ledger(url, stop["budget"])
    assert limit <= used <= limit + max(run.calls), (used, run.calls)
    assert used <= sum(run.calls)  # every counted token was a call the model answered


def test_the_budget_holds_across_worker_processes(cli: Cli) -> None:
    url, limit = f"sqlite:///{cli.tmp_path / 'store.db'}", 60_000
    run = review(cli, url, "--max-tokens", str(limit), "--workers", "2", "--rate-limit", "rpm=6000")
    assert run.done.returncode == 1, run.done.stderr
    found = BUDGET_NAME.search(run.done.stdout)  # the summary line of the live view
    assert found is not None, run.done.stdout
    budget = found[1]
    assert run.error.startswith("error: the review of ") and f"by budget {budget}: " in run.error
    assert f"stopped by budget {budget}: " in run.report.read_text()
    used = ledger(url, budget)
    assert limit <= used <= limit + max(run.calls), (used, run.calls)
    # the lead alone spent less than the limit: the members' calls, made in the worker
    # processes, were counted on the same ledger
    assert lead_tokens(url, budget.removeprefix("session://")) < limit


def test_resume_keeps_the_budget_and_a_larger_one_finishes_the_review(cli: Cli) -> None:
    url, limit = f"sqlite:///{cli.tmp_path / 'store.db'}", 20_000
    first = review(cli, url, "--max-tokens", str(limit))
    assert first.done.returncode == 1, first.done.stderr
    found = BUDGET_NAME.search(first.done.stdout)
    assert found is not None, first.done.stdout
    budget, spent = found[1], ledger(url, found[1])
    # resumed without the option: the same budget, spent already, stops it again at once
    again = review(cli, url, "--resume")
    assert again.done.returncode == 1 and f"stopped by budget {budget}: " in again.error
    assert ledger(url, budget) == spent
    # resumed with a larger budget: it continues on the same ledger, to the whole report
    done = review(cli, url, "--resume", "--max-tokens", str(WHOLE))
    assert done.done.returncode == 0, done.done.stderr
    assert re.search(r"^review of \S+ finished in", done.done.stdout, re.MULTILINE)
    text = first.report.read_text()
    assert "stopped by budget" not in text and "## Not fully reviewed" not in text
    assert ledger(url, budget) > spent
