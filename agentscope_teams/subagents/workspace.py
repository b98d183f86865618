"""Isolated run directories and the janitor that removes orphaned ones.

An isolated run works in::

    <workspace root>/.subagents/<org>/<user>/<parent session>/<spec>/<slot>

every segment escaped with :func:`encode_segment` (``"../x"`` stays one harmless name). The slot is
``r:<run id>`` for an unlabelled run, removed when the run ends, or ``l:<label>`` for a labelled one,
kept so that a later run with the same label (which continues the same child session) finds its files.
``spec.workspace.path``, when set, seeds a new isolated directory with a copy of that directory's
contents (the child never writes into the definition directory); shared runs ignore it.

:func:`janitor` removes ``r:`` directories whose run is no longer active (a crashed process never
removed them): it reconciles each record first, so a run whose lease expired becomes ``lost``.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import anyio

from ..context import RuntimeContext
from ..store.base import BaseStore, decode_segment, encode_segment
from .runs import RunBook

log = logging.getLogger(__name__)

SUBAGENTS_DIR = ".subagents"


def slot_for(run_id: str, label: str | None) -> str:
    return "l:" + label if label else "r:" + run_id


def run_dir(root: Path, ctx: RuntimeContext, spec: str, slot: str) -> Path:
    """The isolated directory of a run of ``spec`` spawned in ``ctx``'s session."""
    segments = (*ctx.scope(), spec, slot)
    return root.joinpath(SUBAGENTS_DIR, *(encode_segment(s) for s in segments))


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
        base = base.joinpath(*(encode_segment(s) for s in ctx.scope()))
    depth = 2 if ctx is not None else 5
    slots = await anyio.to_thread.run_sync(_slot_dirs, base, depth)
    removed: list[Path] = []
    for slot in slots:
        name = decode_segment(slot.name)
        if not name.startswith("r:"):
            continue  # labelled directories are kept on purpose
        org, user, session = (decode_segment(slot.parents[i].name) for i in (3, 2, 1))
        rec = await RunBook(store, org, user, session).load(name[2:])
        if rec is not None and rec.status.active:
            continue
        await remove(slot)
        log.info("janitor removed %s (run %s)", slot, rec.status if rec else "unknown")
        removed.append(slot)
    return removed
