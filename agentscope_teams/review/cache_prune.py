"""Pruning the review's analysis cache directory (see :mod:`.cache`), so it does not grow forever.

A result file's modification time is its last use (a cache hit touches it). At most once a day per
directory, the first review that uses the cache removes:

- results not used for ``$AGENTSCOPE_TEAMS_REVIEW_CACHE_DAYS`` days (default 30; ``0`` keeps
  everything), with their lock files;
- lock files and temporary files left without a result for that long;
- the older half of ``analyses.jsonl`` once it passes 1 MiB.

A result whose lock another process holds (it is being analysed or read) is left alone. Removing a
result only costs a later review its re-analysis; pruning never fails a review (errors are logged).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigurationError
from ._flock import open_lock, read_private, try_lock, write_private

log = logging.getLogger(__name__)

DAYS_ENV = "AGENTSCOPE_TEAMS_REVIEW_CACHE_DAYS"
DEFAULT_DAYS = 30.0
EVERY_SECONDS = 24 * 3600.0
LOG_LIMIT = 1 << 20  # analyses.jsonl is cut to its newer half past this size
MARKER = ".pruned"  # its modification time: the last pruning
_PRUNE_LOCK = ".prune.lock"


@dataclass
class Pruned:
    """What one pruning removed."""

    results: int = 0
    stray: int = 0  # lock and temporary files without a result
    log_bytes: int = 0


def max_age(env: Mapping[str, str] | None = None) -> float | None:
    """Seconds a result is kept unused, from :data:`DAYS_ENV`; None: never prune.

    :class:`~agentscope_teams.errors.ConfigurationError` naming the variable when it is not a
    number of days >= 0."""
    raw = (os.environ if env is None else env).get(DAYS_ENV, "").strip()
    if not raw:
        return DEFAULT_DAYS * 86400
    try:
        days = float(raw)
    except ValueError:
        days = -1.0
    if not days >= 0:
        raise ConfigurationError(
            f"{DAYS_ENV}={raw!r}: expected a number of days >= 0 (0 keeps every result)"
        )
    return days * 86400 if days > 0 else None


def touch(path: Path) -> None:
    """Mark a result used now (its age counts from its last use)."""
    with contextlib.suppress(OSError):
        os.utime(path, follow_symlinks=False)


def maybe_prune(directory: Path, age: float | None, now: float | None = None) -> Pruned | None:
    """Prune ``directory`` if ``age`` allows and no pruning ran there in the last day (and no
    other process is pruning it now); what was removed, or None when it did not run."""
    if age is None:
        return None
    now = time.time() if now is None else now
    marker = directory / MARKER
    with contextlib.suppress(OSError):
        if now - marker.stat().st_mtime < EVERY_SECONDS:
            return None
    try:
        with _locked(directory / _PRUNE_LOCK) as mine:
            if not mine:
                return None
            found = prune(directory, age, now)
            write_private(marker, b"")
            os.utime(marker, (now, now), follow_symlinks=False)
    except OSError as exc:
        log.warning("could not prune the review cache %s: %s", directory, exc)
        return None
    if found.results or found.stray or found.log_bytes:
        log.info(
            "review cache %s: removed %d results unused for %.0f days, %d stray files, "
            "%d bytes of %s",
            directory,
            found.results,
            age / 86400,
            found.stray,
            found.log_bytes,
            "analyses.jsonl",
        )
    return found


def prune(directory: Path, age: float, now: float) -> Pruned:
    """Remove what :func:`maybe_prune` removes, now (see the module docs)."""
    out, cutoff = Pruned(), now - age
    results = {p.stem for p in directory.glob("*.json")}
    for result in sorted(directory.glob("*.json")):
        if _older(result, cutoff) and _remove_unlocked(result, directory / f"{result.stem}.lock"):
            out.results += 1
    for lock in directory.glob("*.lock"):
        if lock.name != _PRUNE_LOCK and lock.stem not in results and _older(lock, cutoff):
            out.stray += _remove_unlocked(None, lock)
    for tmp in directory.glob("*.tmp"):
        if _older(tmp, cutoff):
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
                out.stray += 1
    out.log_bytes = _trim_log(directory / "analyses.jsonl")
    return out


def _older(path: Path, cutoff: float) -> bool:
    try:
        return path.stat().st_mtime < cutoff
    except FileNotFoundError:
        return False


def _remove_unlocked(result: Path | None, lock: Path) -> bool:
    """Remove ``result`` and ``lock`` if no process holds ``lock``; whether they were removed."""
    with _locked(lock) as mine:
        if not mine:
            return False
        if result is not None:
            with contextlib.suppress(FileNotFoundError):
                result.unlink()
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
    return True


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[bool]:
    """Hold ``path``'s ``flock`` for the block if it is free now (yields False if it is not)."""
    with open_lock(path) as fh:
        yield try_lock(fh)  # closing the file releases the lock


def _trim_log(path: Path) -> int:
    """Keep the newer half of ``path`` (whole lines) once it passes :data:`LOG_LIMIT`; bytes cut.
    A line another process appends while the file is rewritten may be lost (it is a log)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    if size <= LOG_LIMIT:
        return 0
    data = read_private(path)
    cut = data.find(b"\n", len(data) // 2) + 1
    if cut <= 0:
        return 0
    write_private(path, data[cut:])
    return cut
