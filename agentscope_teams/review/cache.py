"""``AnalysisCache``: each file analysed once, whoever asks and in whichever process.

The three members of a review all need the findings of the same files (each keeps its own area).
The cache keys a file by its path, its text and the engine (package, ruff and bandit versions, the
rulebook), and:

- in one process, a second request for a key waits for the first one's analysis instead of
  starting its own (members in the lead's process share one model, hence one cache);
- across processes (``review --workers N``, a resumed review), results live in a directory, one
  JSON file per key written atomically, and a lock file per key (``flock``) makes a process that
  wants a key another process is analysing wait for it and then read the result (a process that
  dies releases its locks with it).

Every batch analysed appends one line to ``analyses.jsonl`` in the directory (pid and paths):
what was analysed, and by whom. The default directory is ``$AGENTSCOPE_TEAMS_REVIEW_CACHE``, else
``$XDG_CACHE_HOME/agentscope_teams/review`` (``~/.cache/...``); results are small and are reused by
later reviews of unchanged files. Results unused for 30 days are pruned (:mod:`.cache_prune`).

**A directory another user could write to is not used.** Planted results would hide findings, so
before its first use the directory (created ``0700`` if missing) must belong to this user and be
writable by nobody else; otherwise the review goes on with a cache in this process only and logs
a warning naming the directory and the reason (a review never fails because of its cache). Every
file in it is opened with ``O_NOFOLLOW`` and written ``0600`` (see :mod:`._flock`); a file that
cannot be used that way is a cache miss.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import IO

import anyio
from pydantic import TypeAdapter

from ._flock import (
    append_private,
    open_lock,
    read_private,
    try_lock,
    unsafe_directory,
    write_private,
)
from .analyzer import analyze_sources
from .cache_prune import max_age, maybe_prune, touch
from .findings import Finding
from .rulebook import BANDIT_SKIP, RUFF_CONFIG, RUFF_IGNORE, RUFF_SELECT, RULES

log = logging.getLogger(__name__)

CACHE_ENV = "AGENTSCOPE_TEAMS_REVIEW_CACHE"
LOG_NAME = "analyses.jsonl"
_FINDINGS = TypeAdapter(list[Finding])
LOCK_POLL = 0.02


async def _wait_for_lock(fh: IO[bytes]) -> None:
    """Poll: another process holds the lock, and a lock file gives no event to wait on."""
    for _ in itertools.count():  # cross-process: nothing to await but time
        if try_lock(fh):
            return
        await anyio.sleep(LOCK_POLL)


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where results are kept: ``$AGENTSCOPE_TEAMS_REVIEW_CACHE``, else the user's cache dir."""
    env = os.environ if env is None else env
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV])
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "agentscope_teams" / "review"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def engine_id() -> str:
    """Changes whenever a finding could: package, ruff and bandit versions, the rulebook."""
    parts = [_version("agentscope-teams"), _version("ruff"), _version("bandit")]
    parts += [repr((RUFF_SELECT, RUFF_IGNORE, RUFF_CONFIG, BANDIT_SKIP, sorted(RULES.items())))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _open_locks(directory: Path, keys: list[str]) -> list[IO[bytes]]:
    """The lock files of ``keys``, open (not locked yet); none left open if one fails."""
    held: list[IO[bytes]] = []
    try:
        for key in keys:
            held.append(open_lock(directory / f"{key}.lock"))
    except BaseException:
        for fh in held:
            fh.close()
        raise
    return held


def _usable(directory: Path) -> Path | None:
    """``directory`` if only this user can write to it (created ``0700`` if missing), else None
    with a warning saying why (see the module docs)."""
    try:
        problem = unsafe_directory(directory)
    except OSError as exc:
        problem = f"it cannot be created or inspected ({exc})"
    if problem is None:
        return directory
    log.warning(
        "review cache %s is not used: %s; results stay in this process. Point %s at a directory "
        "of your own (mode 700) to keep them across reviews",
        directory,
        problem,
        CACHE_ENV,
    )
    return None


class AnalysisCache:
    """Findings per (path, text); see the module docs. ``directory=None``: this process only."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self.engine = engine_id()
        self._prune_age = max_age() if directory is not None else None
        self._pruned = False  # at most one pruning look per cache object
        self._checked = False  # the directory's owner and mode, looked at before its first use
        self._check_lock = anyio.Lock()
        self._done: dict[str, list[Finding]] = {}
        self._running: dict[str, anyio.Event] = {}

    def key(self, path: str, source: str) -> str:
        return hashlib.sha256(f"{self.engine}\0{path}\0{source}".encode()).hexdigest()

    async def findings(self, sources: Mapping[str, str]) -> dict[str, list[Finding]]:
        """Findings per path of ``sources``; the files nobody analysed yet, as one batch."""
        keys = {path: self.key(path, text) for path, text in sources.items()}
        waits = [self._running[k] for k in set(keys.values()) if k in self._running]
        mine = {
            p: sources[p] for p, k in keys.items() if k not in self._done and k not in self._running
        }
        events = {keys[p]: self._running.setdefault(keys[p], anyio.Event()) for p in mine}
        try:
            if mine:
                found = await self._analyze(mine, {p: keys[p] for p in mine})
                for path, result in found.items():
                    self._done[keys[path]] = result
        finally:
            for key, event in events.items():
                self._running.pop(key, None)
                event.set()
        for event in waits:
            await event.wait()
        missing = {p: t for p, t in sources.items() if keys[p] not in self._done}
        if missing:  # the analysis another task ran for them failed: try once more here
            return await self.findings(missing) | {
                p: self._done[k] for p, k in keys.items() if p not in missing
            }
        return {path: self._done[key] for path, key in keys.items()}

    async def _analyze(
        self, sources: dict[str, str], keys: dict[str, str]
    ) -> dict[str, list[Finding]]:
        """Lock the keys (sorted, so two batches cannot deadlock), take what another process
        stored meanwhile, analyse the rest in one batch and store it, then unlock. Waiting for a
        lock polls a non-blocking ``flock``: a cancelled review (Ctrl-C) stops at once."""
        directory = await self._directory()
        if directory is None:
            return await analyze_sources(sources)
        if not self._pruned:
            self._pruned = True
            await anyio.to_thread.run_sync(maybe_prune, directory, self._prune_age)
        try:
            held = await anyio.to_thread.run_sync(
                _open_locks, directory, sorted(set(keys.values()))
            )
        except OSError as exc:  # e.g. a symbolic link planted at a lock file's name
            log.warning("review cache %s: %s; analysing without it", directory, exc)
            return await analyze_sources(sources)
        try:
            for fh in held:
                await _wait_for_lock(fh)
            stored = await anyio.to_thread.run_sync(self._read_all, keys)
            todo = {p: t for p, t in sources.items() if p not in stored}
            if not todo:
                return stored
            found = await analyze_sources(todo)
            await anyio.to_thread.run_sync(self._store, found, keys)
            return stored | found
        finally:
            for fh in held:
                fh.close()  # closing the file releases its lock

    async def _directory(self) -> Path | None:
        """The cache directory once checked (see the module docs); None: this process only."""
        async with self._check_lock:
            if self.directory is not None and not self._checked:
                self.directory = await anyio.to_thread.run_sync(_usable, self.directory)
                self._checked = True
        return self.directory

    def _read_all(self, keys: dict[str, str]) -> dict[str, list[Finding]]:
        return {p: found for p, k in keys.items() if (found := self._read(k)) is not None}

    def _store(self, found: dict[str, list[Finding]], keys: dict[str, str]) -> None:
        for path, result in found.items():
            self._write(keys[path], result)
        self._log(sorted(found))

    def _read(self, key: str) -> list[Finding] | None:
        assert self.directory is not None
        path = self.directory / f"{key}.json"
        try:
            found = _FINDINGS.validate_json(read_private(path))
        except (OSError, ValueError):
            return None
        touch(path)  # a result's age counts from its last use
        return found

    def _write(self, key: str, findings: list[Finding]) -> None:
        assert self.directory is not None
        try:
            write_private(self.directory / f"{key}.json", _FINDINGS.dump_json(findings))
        except OSError as exc:  # the result is still returned; only its reuse is lost
            log.warning("review cache %s: cannot store a result: %s", self.directory, exc)

    def _log(self, paths: list[str]) -> None:
        assert self.directory is not None
        line = json.dumps({"pid": os.getpid(), "engine": self.engine, "paths": paths})
        try:
            append_private(self.directory / LOG_NAME, line + "\n")
        except OSError as exc:
            log.warning("review cache %s: cannot log the analysis: %s", self.directory, exc)
