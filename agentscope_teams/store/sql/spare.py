"""Pooled connections the driver path keeps checked out between its calls (:class:`Spare`).

A borrow through SQLAlchemy's pool (``raw_connection``, then the check-in) costs two greenlet
switches, the pool's events and its reset: about 75 µs of CPU per claim + complete on the board's
hot path, against one statement's ≈ 100 µs. :meth:`~.database.Database.driver` therefore gives a
connection it used cleanly (the call returned and no transaction is open on it: :func:`.driver.idle`)
to its :class:`Spare` instead of the pool, and its next call takes it back without a switch.

The connections stay checked out of the engine's pool, so the connection budget is the pool's
(``pool_size`` + ``max_overflow``), shared with every other operation of the store. A
connection is kept only while the kept ones and those checked in are fewer than ``pool_size``
(so at most ``pool_size`` are kept, and at most twice that idle with the pool's own). None is
kept for long: one idle for :data:`IDLE_SECONDS` goes back to the pool at the next borrow (where
``pool_recycle`` and ``pool_pre_ping`` apply again), and when the pool has no connection checked
in, an operation outside the driver path gets one back from the spare ones before it waits for
or opens a connection (:meth:`Spare.starved`). Only a queue pool (the default) has spares: with
``NullPool`` or ``StaticPool`` every connection goes back at once, as before.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy.pool import Pool, QueuePool

#: A spare connection idle this long is given back to the pool rather than used.
IDLE_SECONDS = 10.0


class Spare:
    """The checked-out pooled connections (``_ConnectionFairy``) the driver path may reuse, most
    recently used first."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool if isinstance(pool, QueuePool) else None
        self._idle: list[tuple[Any, float]] = []

    def take(self) -> Any | None:
        """The most recently kept connection, or None (none kept, or it idled too long: then
        :meth:`stale` gives it back)."""
        if not self._idle:
            return None
        pooled, since = self._idle[-1]
        if time.monotonic() - since > IDLE_SECONDS:
            return None
        self._idle.pop()
        return pooled

    def keep(self, pooled: Any) -> bool:
        """Keep ``pooled`` for the next call; False when this pool keeps none, or when the kept
        ones and those checked in make ``pool_size`` already."""
        pool = self._pool
        if pool is None or len(self._idle) + pool.checkedin() >= pool.size():
            return False
        self._idle.append((pooled, time.monotonic()))
        return True

    def stale(self) -> list[Any]:
        """Remove and return the connections idle longer than :data:`IDLE_SECONDS`."""
        cut = time.monotonic() - IDLE_SECONDS
        old = [pooled for pooled, since in self._idle if since < cut]
        if old:
            self._idle = [(p, s) for p, s in self._idle if s >= cut]
        return old

    def starved(self) -> Any | None:
        """One kept connection to give back when the pool has none checked in (so an operation
        outside the driver path neither waits for one nor opens one while these idle)."""
        if not self._idle or self._pool is None or self._pool.checkedin() > 0:
            return None
        return self._idle.pop(0)[0]

    def drain(self) -> list[Any]:
        """Remove and return every kept connection (the store is closing)."""
        kept = [pooled for pooled, _ in self._idle]
        self._idle.clear()
        return kept

    def __len__(self) -> int:
        return len(self._idle)
