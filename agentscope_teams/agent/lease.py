"""Per-session leases in the store: one caller at a time across processes and replicas.

A lease is a key written with ``expected_version=0``, a store TTL and ``indexed=False`` (it is never
listed), so a holder that dies simply lets it expire. Its value names the holder (a random token) and
never changes while it is held, so the value alone identifies the holding: store versions restart
after a key expires, but a newer holder's value differs. The holder renews it every ``ttl / 3`` (a
compare-and-set on its own version *and* its own value, atomically in the store: a fence on the
lease key itself, so a renewal that stalled past the ttl between its read and its write fails
instead of overwriting the next holder's lease at the same version), from a task started only once
the holder outlives the first third: a shorter call costs one timer.

Fencing is done by the store inside each save: the holder passes :meth:`Lease.fence` to the write,
which succeeds only while the lease key still holds this holder's value, atomically with the write
(:class:`~agentscope_teams.store.base.Fence`). Once another caller took the lease over, or it
expired, that save and every later one raise :class:`~agentscope_teams.errors.LeaseLostError`, a
:class:`VersionConflict`. No separate read verifies the lease before a save.

Release: the last save of a call may carry ``fence(release=True)``; the store deletes the lease in
the same operation and the holder is :meth:`Lease.released`. From the moment such a save is fenced,
a renewal writes the lease no more (one whose read came before could otherwise write, at version 1,
over the lease the next holder took once the save deleted it). Otherwise (a failed or cancelled
call, a release save that was cut short) :meth:`Lease.release` deletes it with one fenced delete
(``delete(fence=Fence(key, token))``, :class:`~agentscope_teams.store.base.FencedDeletes`): the store
deletes the lease only if it holds this holder's version *and* value, atomically. So a release
never deletes another holder's lease, even one created again at the very same version after a
force-delete or an expiry, and it needs no read first. A delete that finds a later version with our
value (a renewal cut short by the heartbeat's stop may have landed) reads the lease and deletes it
at the version found. Waiting callers poll with backoff and give up with :class:`SessionBusyError`
after ``wait_timeout``.

A call that failed because the store's connection pool was exhausted
(:class:`~agentscope_teams.errors.StoreBusyError`) still gives its lease back at once: the delete
is unindexed, and stores run such a delete on a connection (or gate turn) kept for it.

A store whose ``delete`` takes no fence (one written before fenced deletes existed) gets the older
release: when the holder wrote the lease less than ``2 * ttl / 3`` ago and confirmed it less than
``ttl / 3`` ago, one delete conditional on the holder's version alone (so a lease force-deleted and
re-created at that very version inside the window is deleted too; its holder is fenced at its next
save or renewal); otherwise a read of the lease first, deleting it only if it still holds this
holder's value (the pool too busy for that read: by version alone, while the lease cannot have
expired).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import uuid
from contextlib import suppress
from types import TracebackType

import anyio
import anyio.abc

from ..errors import LeaseLostError, SessionBusyError, StoreBusyError, VersionConflict
from ..keys import address_of
from ..store.base import BaseStore, Entry, Fence, Key, create_then_get, fenced_deletes_of
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
        self._releasing = False  # a save that gives the lease back was fenced: renew no more
        self._token = b'{"holder": "' + self.holder.encode() + b'"}'  # json.dumps' bytes
        self._written_at = -math.inf  # monotonic time of the last successful write of the lease
        self._confirmed_at = -math.inf  # ... and of the last time the store showed it was ours

    async def _put(self, *, expected_version: int, own: bool = False) -> int:
        """Write the lease, unindexed where the store takes the option (a lease is never listed).

        ``own`` (a renewal): the store writes only if the key still holds this holder's value, in
        the same atomic operation as the version check (a fence on the key itself). The version
        alone cannot tell: once the lease expired, the next holder creates it at version 1 again.
        """
        if capabilities_of(self.store).fencing:
            return await self.store.put(
                self.key,
                self._value(),
                expected_version=expected_version,
                ttl=self.ttl,
                indexed=False,
                fence=Fence(self.key, self._token) if own else None,
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
        """True if the stored lease holds this holder's value; its version is adopted (a renewal
        whose reply was lost, or whose task was cancelled, may have landed)."""
        checked_at = time.monotonic()
        entry = await self.store.get(self.key)
        if entry is None or entry.value != self._token:
            return False
        self.version = entry.version
        self._confirmed_at = checked_at
        return True

    def _mark_lost(self) -> None:
        if not self.lost:
            log.warning("lease %r was taken over by another caller", self.key)
        self.lost = True

    async def renew(self) -> None:
        """Extend the lease; marks it lost if another caller holds it now."""
        if self.lost or self.done or self._releasing:
            return
        if not await self._still_mine():
            if not self.done:  # not released by a save meanwhile
                self._mark_lost()
            return
        if self._releasing:  # that save may have deleted it and a new holder taken it at our
            return  # version since the read: a write now would overwrite the new holder's lease
        written_at = time.monotonic()
        try:
            self.version = await self._put(expected_version=self.version, own=True)
        except VersionConflict:
            if not self.done:  # a save released it meanwhile: not a takeover
                self._mark_lost()
            return
        self._written_at = self._confirmed_at = written_at

    async def heartbeat(self, *, first: float | None = None) -> None:
        """Renew every ``ttl / 3`` (the first time after ``first`` seconds, by default the same)
        until lost; store errors are logged and retried next beat."""
        delay = self.ttl / 3 if first is None else first
        while not self.lost and not self.done:
            await anyio.sleep(delay)
            delay = self.ttl / 3
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
            self._releasing = True
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
        """Delete the lease if it is still this holder's: by its version and value, atomically
        (see the module docs for a store whose delete takes no fence)."""
        if self.lost or self.done:
            return
        deletes = fenced_deletes_of(self.store)
        if deletes is None:
            await self._release_unfenced()
            return
        mine = Fence(self.key, self._token)
        try:
            await deletes.delete(self.key, expected_version=self.version, indexed=False, fence=mine)
        except LeaseLostError:  # expired, or another holder's now: nothing of ours to delete
            pass
        except VersionConflict:  # ours, at a later version: a renewal cut short has landed
            if await self._still_mine():
                with suppress(VersionConflict):
                    await deletes.delete(
                        self.key, expected_version=self.version, indexed=False, fence=mine
                    )
        self.done = True

    async def _release_unfenced(self) -> None:
        """:meth:`release` on a store whose delete takes no fence (module docs)."""
        now = time.monotonic()
        fresh = (
            now - self._written_at < 2 * self.ttl / 3 and now - self._confirmed_at < self.ttl / 3
        )
        if not fresh and not await self._confirm_for_release(now):
            return
        try:
            await self._delete()
        except VersionConflict:  # a renewal cut short may have landed at a later version
            if await self._still_mine():
                with suppress(VersionConflict):
                    await self._delete()
        self.done = True

    async def _delete(self) -> None:
        """Delete the lease at the version this holder knows."""
        if capabilities_of(self.store).fencing:
            await self.store.delete(self.key, expected_version=self.version, indexed=False)
        else:
            await self.store.delete(self.key, expected_version=self.version)


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


class _Heartbeat:
    """Renews a held lease every ``ttl / 3`` from the first third of ``ttl`` on.

    Most calls end long before that, so until then it is one timer of the event loop, not a task:
    the renewing task starts only when the holder outlives the first third (on asyncio; on another
    anyio backend it is a task from the start, in a task group of the holder's own).
    :meth:`stop` ends either, and waits for a renewal under way.
    """

    def __init__(self, lease: Lease) -> None:
        self.lease = lease
        self._task: asyncio.Task[None] | None = None
        self._group: anyio.abc.TaskGroup | None = None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio: started by start_elsewhere()
            self._timer: asyncio.TimerHandle | None = None
        else:
            self._timer = loop.call_later(lease.ttl / 3, self)

    def __call__(self) -> None:
        """The timer's callback (the object itself: no bound method per call): start renewing."""
        self._timer = None
        self._task = asyncio.get_running_loop().create_task(self.lease.heartbeat(first=0.0))

    async def start_elsewhere(self) -> None:
        """On a backend other than asyncio: the heartbeat in a task group (entered here)."""
        if self._timer is None and self._task is None:
            self._group = anyio.create_task_group()
            await self._group.__aenter__()
            self._group.start_soon(self.lease.heartbeat)

    async def stop(self) -> None:
        """End the heartbeat (shielded: a cancelled holder still waits for its renewal's end)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is None and self._group is None:  # the common case: only the timer ran
            return
        with anyio.CancelScope(shield=True):
            if self._task is not None:
                self._task.cancel()
                await asyncio.wait((self._task,))
            if self._group is not None:
                self._group.cancel_scope.cancel()
                await self._group.__aexit__(None, None, None)


class HeldLease:
    """``async with`` it: the lease at ``key`` acquired (waiting up to ``wait_timeout``) and
    renewed while the body runs (:class:`_Heartbeat`), released after; ``read`` is read with the
    acquisition (:attr:`Lease.read`). The body's exception propagates as is.

    A plain class, not ``asynccontextmanager`` and a task group: entering it on the hot path of
    every call costs no generator, task or cancel scope (``bench/RESULTS.md``, h-cpu2).
    """

    def __init__(
        self, store: BaseStore, key: Key, *, ttl: float, wait_timeout: float, read: Key | None
    ) -> None:
        self.lease = Lease(store, key, ttl, read=read)
        self.wait_timeout = wait_timeout
        self._beat: _Heartbeat | None = None

    async def __aenter__(self) -> Lease:
        await acquire(self.lease, self.wait_timeout)
        self._beat = _Heartbeat(self.lease)
        try:
            await self._beat.start_elsewhere()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self.lease

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self._beat is not None:
                await self._beat.stop()
        finally:
            if not (self.lease.lost or self.lease.done):  # else release() has nothing to do
                await self._release()

    async def _release(self) -> None:
        """Release the lease, shielded from cancellation; an error is logged."""
        with anyio.CancelScope(shield=True):
            try:
                await self.lease.release()
            except Exception as exc:  # the lease expires on its own; keep the body's outcome
                log.warning("could not release lease %r: %s", self.lease.key, exc)


def hold_lease(
    store: BaseStore, key: Key, *, ttl: float, wait_timeout: float, read: Key | None = None
) -> HeldLease:
    """Acquire the lease at ``key`` (waiting up to ``wait_timeout``), renew it while the body runs;
    ``read`` is read with the acquisition (:attr:`Lease.read`). See :class:`HeldLease`."""
    return HeldLease(store, key, ttl=ttl, wait_timeout=wait_timeout, read=read)


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
        self._held: HeldLease | None = None

    async def __aenter__(self) -> Lease | None:
        start = time.monotonic()
        await self._lock()
        if self.store is None:
            return None
        try:
            remaining = max(self.wait_timeout - (time.monotonic() - start), 0.0)
            self._held = HeldLease(
                self.store, self.key, ttl=self.ttl, wait_timeout=remaining, read=self.read
            )
            return await self._held.__aenter__()
        except BaseException:
            self._held = None
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
    ) -> None:
        try:
            if self._held is not None:
                await self._held.__aexit__(et, e, tb)
        finally:
            self._held = None
            self.lock.release()
