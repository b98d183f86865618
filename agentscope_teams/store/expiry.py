"""Freeing the space of expired entries while a process runs: :func:`sweep_expired`.

An expired entry is absent for every operation at once, in every backend (see :mod:`.base`).
Its bytes are another matter: Redis frees them itself (a key's ``PEXPIRE``), the other backends
only when something removes them. Those declare :class:`PurgesExpired`
(:attr:`~.capabilities.StoreCapabilities.purges_expired`): ``purge_expired(limit=n)`` removes at
most ``n`` expired entries (and what they hold: SQL chunks, the file store's files and emptied
directories) and says how many went, each one checked again as it goes (an entry written again
meanwhile is kept). :func:`sweep_expired` calls it every ``every`` seconds while a server runs
(``serve`` does, ``--expiry-sweep``), at once again while a batch comes back full, so each pass is
bounded and a backlog still drains.
"""

from __future__ import annotations

import logging
from typing import Protocol, runtime_checkable

import anyio

from .capabilities import capabilities_of

log = logging.getLogger(__name__)

#: How often ``serve`` sweeps by default.
SWEEP_SECONDS = 60.0
#: Entries removed per call of ``purge_expired`` by a sweep.
SWEEP_BATCH = 500


@runtime_checkable
class PurgesExpired(Protocol):
    """The capability of removing expired entries on request (see the module docs)."""

    async def purge_expired(self, limit: int | None = None) -> int: ...


def purger_of(store: object) -> PurgesExpired | None:
    """``store`` as :class:`PurgesExpired` when it declares the capability, else None (its
    backend frees expired entries itself, or it cannot)."""
    if capabilities_of(store).purges_expired and isinstance(store, PurgesExpired):
        return store
    return None


async def sweep_expired(
    store: object, *, every: float = SWEEP_SECONDS, batch: int = SWEEP_BATCH
) -> None:
    """Remove ``store``'s expired entries, ``batch`` at a time, every ``every`` seconds, until
    cancelled; returns at once for a store that frees them itself. A failed pass is logged and
    the next one tries again (the store may be away for a while)."""
    purger = purger_of(store)
    if purger is None:
        return
    while True:
        try:
            removed = await purger.purge_expired(limit=batch)
        except Exception as exc:  # a janitor: the server goes on, the next pass tries again
            log.warning("expired entries of the store were not purged: %s", exc)
            removed = 0
        await anyio.sleep(0 if removed >= batch else every)
