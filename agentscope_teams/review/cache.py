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
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
from collections.abc import AsyncIterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import IO

import anyio
from pydantic import TypeAdapter

from ._flock import open_lock, try_lock
from .analyzer import analyze_sources
from .cache_prune import max_age, maybe_prune, touch
from .findings import Finding
from .rulebook import BANDIT_SKIP, RUFF_CONFIG, RUFF_IGNORE, RUFF_SELECT, RULES

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


class AnalysisCache:
    """Findings per (path, text); see the module docs. ``directory=None``: this process only."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self.engine = engine_id()
        self._prune_age = max_age() if directory is not None else None
        self._pruned = False  # at most one pruning look per cache object
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
        if self.directory is None:
            return await analyze_sources(sources)
        directory = self.directory
        await anyio.to_thread.run_sync(lambda: directory.mkdir(parents=True, exist_ok=True))
        if not self._pruned:
            self._pruned = True
            await anyio.to_thread.run_sync(maybe_prune, directory, self._prune_age)
        async with self._locked(sorted(set(keys.values()))):
            stored = await anyio.to_thread.run_sync(self._read_all, keys)
            todo = {p: t for p, t in sources.items() if p not in stored}
            if not todo:
                return stored
            found = await analyze_sources(todo)
            await anyio.to_thread.run_sync(self._store, found, keys)
            return stored | found

    @contextlib.asynccontextmanager
    async def _locked(self, keys: list[str]) -> AsyncIterator[None]:
        assert self.directory is not None
        held: list[IO[bytes]] = []
        try:
            for key in keys:
                fh = open_lock(self.directory / f"{key}.lock")
                held.append(fh)
                await _wait_for_lock(fh)
            yield
        finally:
            for fh in held:
                fh.close()  # closing the file releases its lock

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
            found = _FINDINGS.validate_json(path.read_bytes())
        except (OSError, ValueError):
            return None
        touch(path)  # a result's age counts from its last use
        return found

    def _write(self, key: str, findings: list[Finding]) -> None:
        assert self.directory is not None
        target = self.directory / f"{key}.json"
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(_FINDINGS.dump_json(findings))
        os.replace(tmp, target)

    def _log(self, paths: list[str]) -> None:
        assert self.directory is not None
        line = json.dumps({"pid": os.getpid(), "engine": self.engine, "paths": paths})
        with open(self.directory / LOG_NAME, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
