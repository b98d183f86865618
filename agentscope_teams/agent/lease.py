"""Per-session leases in the store: one caller at a time across processes and replicas.

A lease is a key written with ``expected_version=0``, a store TTL and ``indexed=False`` (it is never
listed), so a holder that dies simply lets it expire. Its value names the holder (a random token) and
never changes while it is held, so the value alone identifies the holding: store versions restart
after a key expires, but a newer holder's value differs. The holder renews it from a heartbeat task (a
compare-and-set on its own version after checking that the key still holds its value).

Fencing is done by the store inside each save: the holder passes :meth:`Lease.fence` to the write,
which succeeds only while the lease key still holds this holder's value, atomically with the write
(:class:`~agentscope_teams.store.base.Fence`). Once another caller took the lease over, or it
expired, that save and every later one raise :class:`~agentscope_teams.errors.LeaseLostError`, a
:class:`VersionConflict`. No separate read verifies the lease before a save.

Release: the last save of a call may carry ``fence(release=True)``; the store deletes the lease in
the same operation and the holder is :meth:`Lease.released`. Otherwise (a failed or cancelled call,
a release save that was cut short) :meth:`Lease.release` deletes it. When the holder wrote the lease
less than ``2 * ttl / 3`` ago (so it cannot have expired and been re-created) and confirmed it less
than ``ttl / 3`` ago, release is one delete conditional on the holder's version. The trade-off: if,
inside that window, someone force-deletes the lease *and* a new holder re-creates it at the very same
version number, that new lease is deleted too; its holder is fenced at its next save or renewal, as
after any takeover. Otherwise release reads the lease first and deletes it only if it still holds
this holder's value. Waiting callers poll with backoff and give up with :class:`SessionBusyError`
after ``wait_timeout``.

A call that failed because the store's connection pool was exhausted
(:class:`~agentscope_teams.errors.StoreBusyError`) still gives its lease back at once: the delete
is unindexed, and stores run such a delete on a connection (or gate turn) kept for it. Should the
confirming read itself find the pool busy, the lease is deleted by version alone while it cannot
have expired (written less than ``2 * ttl / 3`` ago), with the trade-off above.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from types import TracebackType

import anyio

from ..errors import LeaseLostError, SessionBusyError, StoreBusyError, VersionConflict
from ..keys import address_of
from ..store.base import BaseStore, Entry, Fence, Key, create_then_get
from ..store.capabilities import capabilities_of

log = logging.getLogger(__name__)


class Lease:
    """A held lease: :meth:`fence` fences a save with it; :meth:`verify` raises once it is lost."""

    def __init__(self, store: BaseStore, key: Key, ttl: float, *, read: Key | None = None) -> None:
        self.store, self.key, self.ttl = store, key, ttl
        #: The key read together with acquiring (the record the lease guards), and what it held
        #: then (None: absent, or no ``read`` key).
        self.read_key = read
        self.read: Entry | None = None
        self.holder = uuid.uuid4().hex
        self.version = 0
        self.lost = False
        self.done = False  # released (by release() or by a save's fence), not lost
        self._token = json.dumps({"holder": self.holder}).encode()
        self._written_at = -math.inf  # monotonic time of the last successful write of the lease
        self._confirmed_at = -math.inf  # ... and of the last time the store showed it was ours

    async def _put(self, *, expected_version: int) -> int:
        """Write the lease, unindexed where the store takes the option (a lease is never listed)."""
        if capabilities_of(self.store).fencing:
            return await self.store.put(
                self.key,
                self._value(),
                expected_version=expected_version,
                ttl=self.ttl,
                indexed=False,
            )
        return await self.store.put(
            self.key, self._value(), expected_version=expected_version, ttl=self.ttl
        )

    @property
    def fenced_by_store(self) -> bool:
        """Whether saves can carry :meth:`fence`; else the holder verifies before each save."""
        return capabilities_of(self.store).fencing

    def _value(self) -> bytes:
        return self._token

    async def try_acquire(self) -> bool:
        """Create the lease key if absent, then read :attr:`read_key` (one round trip where the
        store has it, see :func:`~agentscope_teams.store.base.create_then_get`); False if someone
        holds it."""
        try:
            if self.read_key is None:
                self.version = await self._put(expected_version=0)
            else:
                self.version, self.read = await create_then_get(
                    self.store, self.key, self._value(), ttl=self.ttl, read=self.read_key
                )
        except VersionConflict:
            return False
        self._written_at = self._confirmed_at = time.monotonic()
        return True

    async def _still_mine(self) -> bool:
        """True if the stored lease is this holder's, at the version it last wrote."""
        checked_at = time.monotonic()
        entry = await self.store.get(self.key)
        if entry is None or entry.version != self.version:
            return False
        mine = entry.value == self._token
        if mine:
            self._confirmed_at = checked_at
        return mine

    def _mark_lost(self) -> None:
        if not self.lost:
            log.warning("lease %r was taken over by another caller", self.key)
        self.lost = True

    async def renew(self) -> None:
        """Extend the lease; marks it lost if another caller holds it now."""
        if self.lost or self.done:
            return
        if not await self._still_mine():
            if not self.done:  # not released by a save meanwhile
                self._mark_lost()
            return
        written_at = time.monotonic()
        try:
            self.version = await self._put(expected_version=self.version)
        except VersionConflict:
            if not self.done:  # a save released it meanwhile: not a takeover
                self._mark_lost()
            return
        self._written_at = self._confirmed_at = written_at

    async def heartbeat(self) -> None:
        """Renew every ``ttl / 3`` until lost; store errors are logged and retried next beat."""
        while not self.lost and not self.done:
            await anyio.sleep(self.ttl / 3)
            try:
                await self.renew()
            except Exception as exc:
                log.warning("could not renew lease %r: %s", self.key, exc)

    def check(self) -> None:
        """Raise :class:`VersionConflict` if the lease is known to be lost (no store access)."""
        if self.lost:
            raise VersionConflict(self.key, self.version, None)

    def fence(self, *, release: bool = False) -> Fence:
        """The condition that fences a save with this lease (see the module docs); ``release``
        also deletes the lease with that save: call :meth:`released` once the save succeeded."""
        self.check()
        if release:  # until the outcome is known, release() must read before it deletes
            self._confirmed_at = -math.inf
        return Fence(self.key, self._token, release)

    def released(self) -> None:
        """Record that a save carrying ``fence(release=True)`` deleted the lease."""
        self.done = True

    def lost_by(self, exc: BaseException) -> None:
        """Record that a fenced save failed because the lease is gone (``LeaseLostError``)."""
        if isinstance(exc, LeaseLostError) and exc.lease_key == self.key:
            self._mark_lost()

    async def verify(self) -> None:
        """Raise :class:`VersionConflict` unless the store still holds this lease (before a save)."""
        if not self.lost and not await self._still_mine():
            self._mark_lost()
        self.check()

    async def _confirm_for_release(self, now: float) -> bool:
        """Whether release may delete: the lease is still ours, or (the pool too busy to read
        it) it cannot have expired since this holder wrote it."""
        try:
            return await self._still_mine()
        except StoreBusyError:
            if now - self._written_at < 2 * self.ttl / 3:
                return True
            raise

    async def release(self) -> None:
        """Delete the lease if it is still this holder's (see the module docs for the one case)."""
        if self.lost or self.done:
            return
        now = time.monotonic()
        fresh = (
            now - self._written_at < 2 * self.ttl / 3 and now - self._confirmed_at < self.ttl / 3
        )
        if not fresh and not await self._confirm_for_release(now):
            return
        with suppress(VersionConflict):
            if capabilities_of(self.store).fencing:
                await self.store.delete(self.key, expected_version=self.version, indexed=False)
            else:
                await self.store.delete(self.key, expected_version=self.version)
        self.done = True


async def acquire(lease: Lease, wait_timeout: float) -> None:
    """Poll until ``lease`` is acquired; :class:`SessionBusyError` after ``wait_timeout`` seconds."""
    deadline = time.monotonic() + wait_timeout
    delay = 0.02
    while not await lease.try_acquire():
        if time.monotonic() >= deadline:
            raise SessionBusyError(
                f"session {address_of(lease.key)!r} is busy: another call holds it and did not finish "
                f"within {wait_timeout:g}s; retry later or raise busy_timeout"
            )
        await anyio.sleep(min(delay, max(deadline - time.monotonic(), 0.0)))
        delay = min(delay * 1.5, 0.5)


@asynccontextmanager
async def hold_lease(
    store: BaseStore, key: Key, *, ttl: float, wait_timeout: float, read: Key | None = None
) -> AsyncIterator[Lease]:
    """Acquire the lease at ``key`` (waiting up to ``wait_timeout``), renew it while the body runs;
    ``read`` is read with the acquisition (:attr:`Lease.read`).

    The body's exception propagates as is (not wrapped in an ``ExceptionGroup``).
    """
    lease = Lease(store, key, ttl, read=read)
    await acquire(lease, wait_timeout)
    error: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lease.heartbeat)
            try:
                yield lease
            except BaseException as exc:  # re-raised below, outside the task group
                error = exc
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await lease.release()
            except Exception as exc:  # the lease expires on its own; keep the body's outcome
                log.warning("could not release lease %r: %s", key, exc)
    if error is not None:
        raise error


class SessionGuard:
    """Exclusive access to one session: the in-process lock, then (if given a store) its lease.

    Waiting for both together is bounded by ``wait_timeout`` (:class:`SessionBusyError`). Entering
    yields the held :class:`Lease`, or None when the store is private to this process. ``read``
    (the session record's key) is read with the lease's acquisition: :attr:`Lease.read`.
    """

    def __init__(
        self,
        lock: anyio.Lock,
        store: BaseStore | None,
        key: Key,
        *,
        ttl: float,
        wait_timeout: float,
        read: Key | None = None,
    ) -> None:
        self.lock, self.store, self.key, self.read = lock, store, key, read
        self.ttl, self.wait_timeout = ttl, wait_timeout
        self._lease_cm: contextlib.AbstractAsyncContextManager[Lease] | None = None

    async def __aenter__(self) -> Lease | None:
        start = time.monotonic()
        await self._lock()
        if self.store is None:
            return None
        try:
            remaining = max(self.wait_timeout - (time.monotonic() - start), 0.0)
            self._lease_cm = hold_lease(
                self.store, self.key, ttl=self.ttl, wait_timeout=remaining, read=self.read
            )
            return await self._lease_cm.__aenter__()
        except BaseException:
            self._lease_cm = None
            self.lock.release()
            raise

    async def _lock(self) -> None:
        try:
            self.lock.acquire_nowait()
            return
        except anyio.WouldBlock:
            pass
        with anyio.move_on_after(self.wait_timeout) as waited:
            await self.lock.acquire()
        if waited.cancelled_caught:
            raise SessionBusyError(
                f"session {address_of(self.key)!r} is busy: an earlier call in this process did not "
                f"finish within {self.wait_timeout:g}s; retry later or raise busy_timeout"
            )

    async def __aexit__(
        self,
        et: type[BaseException] | None,
        e: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        try:
            if self._lease_cm is not None:
                return await self._lease_cm.__aexit__(et, e, tb)
            return None
        finally:
            self._lease_cm = None
            self.lock.release()
