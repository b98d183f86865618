"""Pruning the analysis cache: results unused for the configured days go, used and locked ones stay,
once a day, and a bad setting is named."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from agentscope_teams.errors import ConfigurationError
from agentscope_teams.review import cache_prune
from agentscope_teams.review.cache import LOG_NAME, AnalysisCache
from agentscope_teams.review.cache_prune import DAYS_ENV, max_age, maybe_prune

DAY = 86400.0
SOURCE = {"m.py": "def f(items=[]):\n    return items\n"}


def aged(path: Path, days: float) -> Path:
    """``path`` (created if missing), last modified ``days`` ago."""
    if not path.exists():
        path.write_text("[]" if path.suffix == ".json" else "")
    when = time.time() - days * DAY
    os.utime(path, (when, when))
    return path


def entry(directory: Path, name: str, days: float) -> Path:
    """A stored result and its lock file, both ``days`` old."""
    aged(directory / f"{name}.lock", days)
    return aged(directory / f"{name}.json", days)


def results(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json"))


def test_old_results_go_and_fresh_or_locked_ones_stay(tmp_path: Path) -> None:
    old, fresh, busy = (entry(tmp_path, n, d) for n, d in (("old", 40), ("fresh", 2), ("busy", 40)))
    aged(tmp_path / "stray.lock", 40)  # a lock file left without a result
    aged(tmp_path / "x.123.tmp", 40)  # a write cut short
    with open(tmp_path / "busy.lock", "a+b") as held:  # another process is on this key
        fcntl.flock(held, fcntl.LOCK_EX)
        found = maybe_prune(tmp_path, 30 * DAY)
    assert found is not None and (found.results, found.stray) == (1, 2)
    assert not old.exists() and not (tmp_path / "old.lock").exists()
    assert fresh.exists() and busy.exists() and (tmp_path / "busy.lock").exists()
    assert not (tmp_path / "stray.lock").exists() and not (tmp_path / "x.123.tmp").exists()
    assert maybe_prune(tmp_path, 30 * DAY) is None  # once a day
    assert maybe_prune(tmp_path, 30 * DAY, now=time.time() + 2 * DAY) is not None


def test_a_long_log_keeps_its_newer_half(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_prune, "LOG_LIMIT", 1000)
    lines = [f'{{"pid": {i}, "paths": ["m.py"]}}' for i in range(100)]
    (tmp_path / LOG_NAME).write_text("\n".join(lines) + "\n")
    found = maybe_prune(tmp_path, 30 * DAY)
    kept = (tmp_path / LOG_NAME).read_text().splitlines()
    assert found is not None and found.log_bytes > 0
    assert kept == lines[-len(kept) :] and 40 <= len(kept) <= 60


@pytest.mark.anyio
async def test_a_hit_counts_as_use_and_the_review_prunes_on_first_analysis(
    tmp_path: Path,
) -> None:
    await AnalysisCache(tmp_path).findings(SOURCE)
    [result] = results(tmp_path)
    aged(result, 40)
    await AnalysisCache(tmp_path).findings(SOURCE)  # a hit: used now, so kept
    assert time.time() - result.stat().st_mtime < DAY
    aged(result, 40)
    os.utime(tmp_path / cache_prune.MARKER, (0, 0))  # the last pruning was long ago
    await AnalysisCache(tmp_path).findings({"other.py": "x = 1\n"})  # a miss: prunes first
    assert len(results(tmp_path)) == 1 and result not in results(tmp_path)


def test_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert max_age({}) == 30 * DAY
    assert max_age({DAYS_ENV: "7"}) == 7 * DAY
    assert max_age({DAYS_ENV: "0"}) is None
    for bad in ("-1", "week", "nan"):
        with pytest.raises(ConfigurationError, match=f"{DAYS_ENV}=.*number of days >= 0"):
            max_age({DAYS_ENV: bad})
    monkeypatch.setenv(DAYS_ENV, "soon")
    with pytest.raises(ConfigurationError, match=DAYS_ENV):
        AnalysisCache(Path("unused"))
