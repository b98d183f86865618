"""Isolated run directories and the janitor that removes orphaned ones.

An isolated run works in::

    <workspace root>/.subagents/<org>/<user>/<parent session>/<spec>/<slot>

every segment named by :func:`~agentscope_teams.store.base.path_segment` (``"../x"`` stays one
harmless name; an id too long for a file name keeps a readable head and a hash). The slot is
``r:<run id>`` for an unlabelled run, removed when the run ends, or ``l:<label>`` for a labelled one,
kept so that a later run with the same label (which continues the same child session) finds its files.
``spec.workspace.path``, when set, seeds a new isolated directory with a copy of that directory's
contents (the child never writes into the definition directory); shared runs ignore it.

:func:`janitor` removes ``r:`` directories whose run is no longer active (a crashed process never
removed them): it reconciles each record first, so a run whose lease expired becomes ``lost``. A
shortened (hashed) org, user or session directory name is matched to its ids through the run records
in the store; a directory that matches no record has no run to keep it. A directory that is a git
worktree (``isolation: worktree``) is removed only when it has no change, with its branch, and the
repository's worktree list is pruned (:func:`~.worktree.discard_orphan`); one with changes is kept.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import anyio

from ..context import RuntimeContext
from ..keys import RUN, RunKeys
from ..listing import UNREADABLE
from ..store.base import BaseStore, decode_segment, is_shortened, path_segment
from .runs import RunBook
from .worktree import discard_orphan, is_worktree

log = logging.getLogger(__name__)

SUBAGENTS_DIR = ".subagents"


def slot_for(run_id: str, label: str | None) -> str:
    return "l:" + label if label else "r:" + run_id


def run_dir(root: Path, ctx: RuntimeContext, spec: str, slot: str) -> Path:
    """The isolated directory of a run of ``spec`` spawned in ``ctx``'s session."""
    return root.joinpath(SUBAGENTS_DIR, *map(path_segment, (*ctx.scope(), spec, slot)))


def _prepare_sync(path: Path, seed: Path | None) -> None:
    for attempt in range(3):  # a janitor may prune an empty parent at the same moment
        try:
            path.mkdir(parents=True, exist_ok=True)
            break
        except FileNotFoundError:
            if attempt == 2:
                raise
    if seed is not None and seed.is_dir() and not any(path.iterdir()):
        shutil.copytree(seed, path, symlinks=True, dirs_exist_ok=True)


async def prepare(path: Path, seed: Path | None = None) -> None:
    """Create ``path`` (seeded with a copy of ``seed``'s contents when it is new and empty)."""
    await anyio.to_thread.run_sync(_prepare_sync, path, seed)


def _remove_sync(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    stop = next((p for p in path.parents if p.name == SUBAGENTS_DIR), None)
    if stop is not None:
        _prune(path, stop)


async def remove(path: Path) -> None:
    """Delete a run directory and its empty parents below ``.subagents`` (missing is fine)."""
    await anyio.to_thread.run_sync(_remove_sync, path)


def _slot_dirs(base: Path, depth: int) -> list[Path]:
    """Directories exactly ``depth`` levels below ``base``."""
    level = [base] if base.is_dir() else []
    for _ in range(depth):
        level = [c for d in level for c in sorted(d.iterdir()) if c.is_dir() and not c.is_symlink()]
    return level


def _prune(path: Path, stop: Path) -> None:
    """Remove empty parents of ``path`` up to (not including) ``stop``."""
    for parent in path.parents:
        if parent == stop or not parent.is_relative_to(stop):
            return
        try:
            os.rmdir(parent)
        except OSError:
            return


async def janitor(store: BaseStore, root: Path, ctx: RuntimeContext | None = None) -> list[Path]:
    """Remove orphaned isolated run directories under ``root``; returns the removed paths.

    With ``ctx`` only the directories of ``ctx``'s session are examined (cheap, done on
    ``agent_list``); without it, every session's (an operator's sweep).
    """
    base = root / SUBAGENTS_DIR
    if ctx is not None:
        base = base.joinpath(*map(path_segment, ctx.scope()))
    depth = 2 if ctx is not None else 5
    slots = await anyio.to_thread.run_sync(_slot_dirs, base, depth)
    scopes = _Scopes(store, ctx)
    removed: list[Path] = []
    for slot in slots:
        slot_name = _decoded(slot.name)
        if slot_name is None or not slot_name.startswith("r:"):
            continue  # labelled directories are kept on purpose
        scope = await scopes.of(tuple(slot.parents[i].name for i in (3, 2, 1)))
        try:
            rec = None if scope is None else await RunBook(store, *scope).load(slot_name[2:])
        except UNREADABLE as exc:  # it may belong to a live run: keep it, sweep the others
            log.warning("janitor kept %s: its run record cannot be read (%s)", slot, exc)
            continue
        if rec is not None and rec.status.active:
            continue
        # isolation: worktree; one with changes is kept for the user
        if is_worktree(slot) and not await discard_orphan(slot):
            continue
        await remove(slot)
        log.info("janitor removed %s (run %s)", slot, rec.status if rec else "unknown")
        removed.append(slot)
    return removed


def _decoded(name: str) -> str | None:
    """The segment a directory name was made from; None if it was shortened or is not ours."""
    if is_shortened(name):
        return None
    try:
        return decode_segment(name)
    except ValueError:
        return None


class _Scopes:
    """The typed (org, user, session) segments behind a session's directory names."""

    PAGE = 500

    def __init__(self, store: BaseStore, ctx: RuntimeContext | None) -> None:
        self.store, self.ctx = store, ctx
        self.found: dict[tuple[str, ...], tuple[str, str, str] | None] = {}

    async def of(self, names: tuple[str, ...]) -> tuple[str, str, str] | None:
        if self.ctx is not None:
            return self.ctx.scope()
        if names not in self.found:
            decoded = [_decoded(n) for n in names]
            org, user, session = decoded
            if org is not None and user is not None and session is not None:
                self.found[names] = (org, user, session)
            else:
                self.found[names] = await self._lookup(names, decoded)
        return self.found[names]

    async def _lookup(
        self, names: tuple[str, ...], decoded: list[str | None]
    ) -> tuple[str, str, str] | None:
        """A shortened name, matched against the scopes of the run records (None: no record)."""
        known: list[str] = []
        for segment in decoded:
            if segment is None:
                break
            known.append(segment)
        prefix, after = RUN.prefix(*known), None
        while True:
            page = await self.store.list_keys(prefix, limit=self.PAGE, after=after)
            for key in page:
                try:
                    scope = RunKeys.parse(key)[0].scope
                except ValueError:
                    continue  # not a run record
                if tuple(map(path_segment, scope)) == names:
                    return scope
            if len(page) < self.PAGE:
                return None
            after = page[-1]
