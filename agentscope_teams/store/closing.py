"""Work that layers above a store run on it and that must land before the store closes.

A layer above the store can leave store operations running beside its caller (the usage
backend's settles of model calls: :mod:`agentscope_teams.usage.settles`). It registers them here
(:func:`land_before_close`), and every backend's ``aclose`` (so also its ``async with`` exit)
first waits for them (:func:`landed`), for at most :data:`LAND_SECONDS`, and logs what is still
running then: a process that closes only its store still counts its last call's usage.
"""

from __future__ import annotations

import logging
import weakref
from typing import Protocol

import anyio

log = logging.getLogger(__name__)

#: How long a store's close waits for the work running on it.
LAND_SECONDS = 10.0


class Unlanded(Protocol):
    """Operations running on a store that its close waits for."""

    #: What they are, for the log (``"settles of model calls' usage"``).
    what: str

    @property
    def pending(self) -> int:
        """How many are still running."""

    async def flush(self) -> None:
        """Wait for those running now (being cancelled leaves them running)."""


_WORK: weakref.WeakKeyDictionary[object, list[Unlanded]] = weakref.WeakKeyDictionary()


def land_before_close(store: object, work: Unlanded) -> None:
    """Make ``store``'s close wait for ``work`` first (once per ``work``)."""
    found = _WORK.setdefault(store, [])
    if not any(w is work for w in found):
        found.append(work)


async def landed(store: object) -> None:
    """Wait for the work registered on ``store`` to land, up to :data:`LAND_SECONDS` in all; log
    a warning naming what is still running then (it is left running; the store closes next)."""
    work = [w for w in _WORK.get(store, ()) if w.pending]
    if not work:
        return
    with anyio.move_on_after(LAND_SECONDS, shield=True):  # bounded: a cancelled close waits too
        for w in work:
            await w.flush()
    for w in work:
        if w.pending:
            log.warning(
                "closing %s: %d %s still running after %g s, not waited for",
                type(store).__name__, w.pending, w.what, LAND_SECONDS,
            )  # fmt: skip
