"""A heartbeat renewal never writes over the lease of the next holder.

The renewal reads the lease, then writes it at its version. If meanwhile the call's last save gave
the lease back (``fence(release=True)``) and the next caller took it, the new lease is at version 1
again: a renewal at version 1 would overwrite it with the old holder's value, fencing the new
holder out of its own saves and holding the session for a call that has ended.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from agentscope_teams.agent.lease import Lease
from agentscope_teams.keys import SessionAddress
from agentscope_teams.store import StoreBackend
from agentscope_teams.store.base import Entry, Key


class ReadThenRace:
    """The store; the next ``get`` of ``key`` runs ``between`` after reading, before returning
    (what other callers did while the read's reply was on its way)."""

    def __init__(self, store: StoreBackend, key: Key) -> None:
        self._store, self._key = store, key
        self.between: Callable[[], Awaitable[None]] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def get(self, key: Key) -> Entry | None:
        found = await self._store.get(key)
        if key == self._key and self.between is not None:
            between, self.between = self.between, None
            await between()
        return found


async def test_a_renewal_racing_the_release_save_leaves_the_next_holder_s_lease(
    store: StoreBackend, ns: str
) -> None:
    addr = SessionAddress(None, ns, "agent", "s")
    await store.put(addr.key, b"record", expected_version=0)
    racing = ReadThenRace(store, addr.lease_key)
    first = Lease(racing, addr.lease_key, ttl=30)
    assert await first.try_acquire() and first.version == 1
    second = Lease(store, addr.lease_key, ttl=30)

    async def last_save_then_next_caller() -> None:
        fence = first.fence(release=True)  # the call's last save gives the lease back
        await store.put(addr.key, b"saved", expected_version=1, fence=fence)
        assert await second.try_acquire() and second.version == 1

    racing.between = last_save_then_next_caller
    await first.renew()  # the heartbeat's renewal, its read answered before that save
    first.released()
    held = await store.get(addr.lease_key)
    assert held is not None and held.value == second._token
    await second.verify()  # still the next caller's: its saves are not fenced out
    await second.release()
    assert await store.get(addr.lease_key) is None


async def test_a_renewal_cut_short_that_landed_does_not_keep_the_lease_after_release(
    store: StoreBackend, ns: str
) -> None:
    key = SessionAddress(None, ns, "agent", "s").lease_key
    lease = Lease(store, key, ttl=30)
    assert await lease.try_acquire() and lease.version == 1
    await lease.renew()
    assert lease.version == 2
    # the heartbeat is stopped while its next renewal is in flight: the write lands (version 3)
    # but the cancelled task never records it
    await store.put(key, lease._token, expected_version=2, ttl=30, indexed=False)
    await lease.release()
    assert lease.done
    assert await store.get(key) is None  # given back now, not held until its ttl runs out


async def _gone(store: StoreBackend, key: Key) -> None:
    """Wait until ``key`` has expired (polled: no wall-clock threshold, only a generous bound)."""
    with anyio.fail_after(30):
        while await store.get(key) is not None:  # noqa: ASYNC110 - a store has no event for it
            await anyio.sleep(0.05)


@pytest.mark.parametrize("how", ["expired", "deleted"])
async def test_a_renewal_stalled_past_the_ttl_never_overwrites_the_next_holder_s_lease(
    store: StoreBackend, ns: str, how: str
) -> None:
    """The renewal reads the lease (still ours, version 1) and stalls; the lease expires and
    another process takes it, at version 1 again. The renewal's write must then fail (the key no
    longer holds our value), not overwrite the new holder's lease at the same version."""
    key = SessionAddress(None, ns, "agent", "s").lease_key
    racing = ReadThenRace(store, key)
    ttl = 0.3 if how == "expired" else 30.0
    first = Lease(racing, key, ttl=ttl)
    assert await first.try_acquire() and first.version == 1
    second = Lease(store, key, ttl=30)

    async def stall_until_taken_over() -> None:
        if how == "expired":
            await _gone(store, key)
        else:  # what an expiry does, without waiting for it
            assert await store.delete(key, indexed=False)
        assert await second.try_acquire() and second.version == 1

    racing.between = stall_until_taken_over
    await first.renew()  # its read answered "still yours" before the takeover
    assert first.lost
    held = await store.get(key)
    assert held is not None and held.value == second._token and held.version == 1
    await second.verify()  # the next holder's saves are not fenced out
    await second.release()
    assert await store.get(key) is None
