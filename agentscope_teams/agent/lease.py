"""Per-session leases in the store: one caller at a time across processes and replicas.

A lease is a key written with ``expected_version=0`` and a store TTL, so a holder that dies simply lets it
expire. The holder renews it (a CAS on its own version) from a heartbeat task; a failed renewal means
another caller took the session over, and every later save by the old holder raises
:class:`VersionConflict` (fencing). Waiting callers poll with backoff and give up with
:class:`SessionBusyError` after ``wait_timeout``.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio

from ..errors import SessionBusyError, VersionConflict
from ..store.base import BaseStore, Key

log = logging.getLogger(__name__)


class Lease:
    """A held lease; :meth:`check` raises once it has been lost."""

    def __init__(self, store: BaseStore, key: Key, ttl: float) -> None:
        self.store, self.key, self.ttl = store, key, ttl
        self.holder = uuid.uuid4().hex
        self.version = 0
        self.lost = False

    def _value(self) -> bytes:
        return json.dumps({"holder": self.holder, "expires_at": time.time() + self.ttl}).encode()

    async def try_acquire(self) -> bool:
        try:
            self.version = await self.store.put(
                self.key, self._value(), expected_version=0, ttl=self.ttl
            )
        except VersionConflict:
            return False
        return True

    async def renew(self) -> None:
        try:
            self.version = await self.store.put(
                self.key, self._value(), expected_version=self.version, ttl=self.ttl
            )
        except VersionConflict:
            self.lost = True
            log.warning("lease %r was taken over by another caller", self.key)

    async def heartbeat(self) -> None:
        while not self.lost:
            await anyio.sleep(self.ttl / 3)
            await self.renew()

    def check(self) -> None:
        """Raise :class:`VersionConflict` if another caller took the lease over."""
        if self.lost:
            raise VersionConflict(self.key, self.version, None)

    async def release(self) -> None:
        if self.lost:
            return
        with suppress(VersionConflict):
            await self.store.delete(self.key, expected_version=self.version)


@asynccontextmanager
async def hold_lease(
    store: BaseStore, key: Key, *, ttl: float, wait_timeout: float
) -> AsyncIterator[Lease]:
    """Acquire the lease at ``key`` (waiting up to ``wait_timeout``), renew it while the body runs."""
    lease = Lease(store, key, ttl)
    deadline = time.monotonic() + wait_timeout
    delay = 0.02
    while not await lease.try_acquire():
        if time.monotonic() >= deadline:
            raise SessionBusyError(
                f"session {key[1:]!r} is busy: another call holds it and did not finish within "
                f"{wait_timeout:g}s; retry later or raise busy_timeout"
            )
        await anyio.sleep(delay)
        delay = min(delay * 1.5, 0.5)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lease.heartbeat)
            try:
                yield lease
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await lease.release()
