"""``run --max-tokens`` / ``--rate-limit``: the budget stops the run and the output names it."""

from __future__ import annotations

import shutil

from .conftest import REPO, Cli

EXAMPLE = REPO / "examples" / "scripted_run"


def _run(cli: Cli, *extra: str) -> tuple[int, str, str]:
    here = cli.tmp_path / "work"
    shutil.copytree(REPO / "examples" / "sample_project", here / "examples" / "sample_project")
    args = ["--specs", str(EXAMPLE / "specs"), "--model", f"scripted:{EXAMPLE / 'script.yaml'}"]
    done = cli.run("run", *args, *extra, "Survey the project", "--store", cli.url, cwd=here)
    return done.returncode, done.stdout, done.stderr


def test_a_token_budget_stops_the_run_and_says_which_budget(cli: Cli) -> None:
    code, out, err = _run(cli, "--max-tokens", "50")
    assert code != 0
    # the subagent's refused call is a tool error the lead read; the lead's own is the run's error
    assert "<- agent_spawn (error):" in out and "BudgetExceededError: budget session:" in out
    assert "error: budget session:" in err and "is spent" in err


def test_without_a_budget_the_same_run_finishes(cli: Cli) -> None:
    code, _, err = _run(cli, "--rate-limit", "rpm=100000")
    assert code == 0, err


def test_a_bad_rate_limit_is_refused_with_the_keys_to_use(cli: Cli) -> None:
    code, _, err = _run(cli, "--rate-limit", "rps=5")
    assert code != 0
    assert "invalid --rate-limit 'rps=5'" in err and "the keys are rpm, tpm" in err


def test_worker_refuses_a_bad_rate_limit_before_it_starts(cli: Cli) -> None:
    done = cli.run("worker", "--rate-limit", "rpm=0", "--store", cli.url)
    assert done.returncode != 0
    assert "invalid --rate-limit 'rpm=0'" in done.stderr
