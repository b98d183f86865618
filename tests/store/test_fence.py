"""Fenced writes and unindexed keys, on every backend (``put(fence=...)``, ``indexed=False``).

A fenced put writes only while another key (a lease), or the written key itself, holds a given
value, checked atomically with the write; ``release=True`` deletes that key in the same operation. Every key starts with the test's
``ns`` segment, so tests sharing a server never see each other's data.
"""

from __future__ import annotations

import anyio
import pytest

from agentscope_teams.agent.lease import Lease
from agentscope_teams.errors import LeaseLostError, VersionConflict
from agentscope_teams.store import Fence, Key, StoreBackend

from ..backends import REDIS_BACKENDS, StoreSpec
from ..teams.round_trips import count_round_trips

EXPIRY_DEADLINE = 20.0


def keys(ns: str) -> tuple[Key, Key]:
    """A record key and its lease key, in one (family, org, user) group as sessions and leases."""
    return ("sessions", ns, "u", "a", "s"), ("leases", ns, "u", "a", "s")


async def test_a_fenced_put_writes_while_the_fence_holds(store: StoreBackend, ns: str) -> None:
    rec, lease = keys(ns)
    await store.put(lease, b"me", expected_version=0, ttl=30, indexed=False)
    assert await store.put(rec, b"v1", expected_version=0, fence=Fence(lease, b"me")) == 1
    assert await store.put(rec, b"v2", expected_version=1, fence=Fence(lease, b"me")) == 2
    assert await store.put(rec, b"v3", fence=Fence(lease, b"me")) == 3
    entry = await store.get(rec)
    assert entry is not None and (entry.value, entry.version) == (b"v3", 3)
    held = await store.get(lease)
    assert held is not None and held.value == b"me"  # a fence without release keeps the lease


@pytest.mark.parametrize("takeover", ["deleted", "overwritten", "never held"])
async def test_a_lost_fence_raises_lease_lost_and_writes_nothing(
    store: StoreBackend, ns: str, takeover: str
) -> None:
    rec, lease = keys(ns)
    await store.put(rec, b"old")
    if takeover == "overwritten":
        await store.put(lease, b"intruder", ttl=30, indexed=False)
    elif takeover == "deleted":
        await store.put(lease, b"me", ttl=30, indexed=False)
        assert await store.delete(lease, indexed=False)
    for expected in (None, 0, 1):
        with pytest.raises(LeaseLostError) as info:
            await store.put(rec, b"new", expected_version=expected, fence=Fence(lease, b"me", True))
        assert isinstance(info.value, VersionConflict)  # what the SPEC promises a stale holder
        assert info.value.key == rec and info.value.lease_key == lease
    entry = await store.get(rec)
    assert entry is not None and (entry.value, entry.version) == (b"old", 1)
    held = await store.get(lease)
    assert (held.value if held else None) == (b"intruder" if takeover == "overwritten" else None)


async def test_release_deletes_the_fence_key_with_the_write(store: StoreBackend, ns: str) -> None:
    rec, lease = keys(ns)
    await store.put(lease, b"me", expected_version=0, ttl=30, indexed=False)
    assert await store.put(rec, b"v1", expected_version=0, fence=Fence(lease, b"me", True)) == 1
    assert await store.get(lease) is None
    # The released lease can be taken again, at version 1, by anybody.
    assert await store.put(lease, b"next", expected_version=0, ttl=30, indexed=False) == 1
    assert await store.put(rec, b"v2", expected_version=1, fence=Fence(lease, b"next", True)) == 2
    assert await store.get(lease) is None


async def test_a_failed_version_check_neither_writes_nor_releases(
    store: StoreBackend, ns: str
) -> None:
    rec, lease = keys(ns)
    await store.put(rec, b"old")
    await store.put(lease, b"me", expected_version=0, ttl=30, indexed=False)
    with pytest.raises(VersionConflict) as info:
        await store.put(rec, b"new", expected_version=5, fence=Fence(lease, b"me", True))
    assert not isinstance(info.value, LeaseLostError) and info.value.found == 1
    held = await store.get(lease)
    assert held is not None and held.value == b"me"


async def test_an_expired_fence_key_fences(store: StoreBackend, ns: str) -> None:
    """A holder that stopped renewing (a crashed call) loses its lease on expiry."""
    rec, lease = keys(ns)
    await store.put(lease, b"me", expected_version=0, ttl=0.3, indexed=False)
    deadline = anyio.current_time() + EXPIRY_DEADLINE
    while await store.get(lease) is not None:
        assert anyio.current_time() < deadline, "the lease did not expire"
        await anyio.sleep(0.05)
    with pytest.raises(LeaseLostError):
        await store.put(rec, b"late", fence=Fence(lease, b"me"))
    assert await store.get(rec) is None


async def test_a_fence_on_the_written_key_cannot_release_it(store: StoreBackend, ns: str) -> None:
    rec, _ = keys(ns)
    await store.put(rec, b"x")
    with pytest.raises(ValueError, match="another key"):
        await store.put(rec, b"y", expected_version=1, fence=Fence(rec, b"x", True))
    with pytest.raises(ValueError):
        await store.put(rec, b"x", fence=Fence((), b"x"))
    entry = await store.get(rec)
    assert entry is not None and (entry.value, entry.version) == (b"x", 1)


async def test_a_fence_on_the_written_key_compares_its_value_with_the_version(
    store: StoreBackend, ns: str
) -> None:
    """A lease's renewal: same version is not enough, the key must still hold the holder's value
    (a key deleted and created again by someone else restarts at the same version)."""
    _, lease = keys(ns)
    assert await store.put(lease, b"me", expected_version=0, ttl=30, indexed=False) == 1
    mine = Fence(lease, b"me")
    assert await store.put(lease, b"me", expected_version=1, ttl=30, indexed=False, fence=mine) == 2
    assert await store.delete(lease, indexed=False)
    assert await store.put(lease, b"other", expected_version=0, ttl=30, indexed=False) == 1
    for expected in (1, None):
        with pytest.raises(LeaseLostError) as info:
            await store.put(
                lease, b"me", expected_version=expected, ttl=30, indexed=False, fence=mine
            )
        assert info.value.key == lease and info.value.lease_key == lease
    held = await store.get(lease)
    assert held is not None and (held.value, held.version) == (b"other", 1)
    with pytest.raises(VersionConflict) as conflict:  # the value holds, the version does not
        await store.put(
            lease, b"other", expected_version=5, ttl=30, indexed=False, fence=Fence(lease, b"other")
        )
    assert not isinstance(conflict.value, LeaseLostError) and conflict.value.found == 1
    assert await store.delete(lease, indexed=False)


async def test_unindexed_keys_read_write_and_delete_like_others(
    store_spec: StoreSpec, store: StoreBackend, ns: str
) -> None:
    _, lease = keys(ns)
    assert await store.put(lease, b"a", expected_version=0, ttl=30, indexed=False) == 1
    with pytest.raises(VersionConflict):
        await store.put(lease, b"b", expected_version=0, indexed=False)
    assert await store.put(lease, b"b", expected_version=1, ttl=30, indexed=False) == 2
    entry = await store.get(lease)
    assert entry is not None and (entry.value, entry.version) == (b"b", 2)
    if store_spec.backend in REDIS_BACKENDS:  # no index maintenance: never listed
        assert await store.list_keys(("leases", ns)) == []
    assert await store.delete(lease, expected_version=2, indexed=False)
    assert await store.get(lease) is None
    assert await store.list_keys(("leases", ns)) == []


async def test_a_taken_over_lease_fences_its_holder_and_not_the_winner(
    store: StoreBackend, ns: str
) -> None:
    """Lease level: the stale holder's save fails, the new holder's succeeds and releases."""
    rec, lease_key = keys(ns)
    stale, winner = Lease(store, lease_key, 0.3), Lease(store, lease_key, 30)
    assert await stale.try_acquire()
    assert await store.put(rec, b"stale", expected_version=0, fence=stale.fence()) == 1
    deadline = anyio.current_time() + EXPIRY_DEADLINE
    while not await winner.try_acquire():  # the stale holder stopped renewing: its lease expires
        assert anyio.current_time() < deadline, "the stale lease did not expire"
        await anyio.sleep(0.05)
    with pytest.raises(LeaseLostError):
        await store.put(rec, b"lost", expected_version=1, fence=stale.fence())
    assert await store.put(rec, b"won", expected_version=1, fence=winner.fence(release=True)) == 2
    winner.released()
    assert await store.get(lease_key) is None
    await winner.release()  # nothing left to do: no store access, no error
    entry = await store.get(rec)
    assert entry is not None and entry.value == b"won"


async def test_a_lease_taken_with_a_read_returns_the_record_it_guards(
    store: StoreBackend, ns: str
) -> None:
    """Acquiring a lease can read the record it guards with it (one script on Redis): the reader
    sees the record as it is once the lease is held, and a held lease refuses with no read."""
    rec, lease_key = keys(ns)
    await store.put(rec, b"record")
    first = Lease(store, lease_key, ttl=30, read=rec)
    assert await first.try_acquire()
    assert first.read is not None and (first.read.value, first.read.version) == (b"record", 1)
    second = Lease(store, lease_key, ttl=30, read=rec)
    assert not await second.try_acquire()  # held by another holder: refused, nothing read
    assert second.read is None and second.version == 0
    # the holder's fenced save still writes, and releases the lease with it
    assert await store.put(rec, b"saved", expected_version=1, fence=first.fence(release=True)) == 2
    assert await store.get(lease_key) is None
    absent = Lease(store, lease_key, ttl=30, read=(*rec[:-1], "other"))
    assert await absent.try_acquire() and absent.read is None  # no record yet: None
    with pytest.raises(LeaseLostError):  # the stale first holder writes nothing
        await store.put(rec, b"stale", fence=Lease(store, lease_key, 30).fence())
    entry = await store.get(rec)
    assert entry is not None and (entry.value, entry.version) == (b"saved", 2)


async def test_release_keeps_a_lease_recreated_at_the_same_version_by_another_holder(
    store: StoreBackend, ns: str
) -> None:
    """Someone force-deletes a held lease and a new holder takes it, at version 1 again, while
    the first holder still thinks it holds it: the first holder's release leaves the new lease."""
    _, lease_key = keys(ns)
    first, second = Lease(store, lease_key, ttl=30), Lease(store, lease_key, ttl=30)
    assert await first.try_acquire() and first.version == 1
    assert await store.delete(lease_key, indexed=False)  # an operator's force-delete
    assert await second.try_acquire() and second.version == 1
    await first.release()  # fresh: it wrote the lease a moment ago
    held = await store.get(lease_key)
    assert held is not None and held.value == second.fence().value
    assert await store.put(lease_key, b"x", expected_version=1, indexed=False, fence=second.fence())


async def test_a_fenced_delete_deletes_only_the_holders_value(store: StoreBackend, ns: str) -> None:
    """``delete(fence=Fence(key, value))``: the key goes only while it holds ``value`` (and is at
    ``expected_version`` when given), checked atomically with the delete."""
    _, lease = keys(ns)
    assert await store.put(lease, b"other", expected_version=0, ttl=30, indexed=False) == 1
    mine = Fence(lease, b"me")
    for expected in (1, None):
        with pytest.raises(LeaseLostError) as info:
            await store.delete(lease, expected_version=expected, indexed=False, fence=mine)
        assert info.value.key == lease and info.value.lease_key == lease
    held = await store.get(lease)
    assert held is not None and (held.value, held.version) == (b"other", 1)
    ours = Fence(lease, b"other")
    with pytest.raises(VersionConflict) as conflict:  # the value holds, the version does not
        await store.delete(lease, expected_version=2, indexed=False, fence=ours)
    assert not isinstance(conflict.value, LeaseLostError) and conflict.value.found == 1
    assert await store.delete(lease, expected_version=1, indexed=False, fence=ours) is True
    assert await store.get(lease) is None
    with pytest.raises(LeaseLostError):  # gone: nothing holds the value
        await store.delete(lease, indexed=False, fence=ours)
    rec, _ = keys(ns)  # a fence on another key: the record goes only while the lease holds
    await store.put(rec, b"r")
    with pytest.raises(LeaseLostError):
        await store.delete(rec, fence=Fence(lease, b"me"))
    assert await store.put(lease, b"me", expected_version=0, ttl=30, indexed=False) == 1
    with pytest.raises(ValueError, match="release"):
        await store.delete(rec, fence=Fence(lease, b"me", True))
    assert await store.delete(rec, expected_version=1, fence=Fence(lease, b"me")) is True
    assert await store.get(rec) is None and await store.get(lease) is not None


@pytest.mark.parametrize("after_a_long_call", [False, True])
async def test_a_lease_is_released_in_the_round_trips_of_an_unfenced_delete(
    store_spec: StoreSpec, store: StoreBackend, ns: str, after_a_long_call: bool
) -> None:
    """The fenced release costs what a delete at a version costs (Redis: one script call; SQL: the
    same statements), also after a long call, where it used to read the lease first."""
    if store_spec.backend in ("memory", "file"):
        pytest.skip("no server to count round trips to")
    _, lease_key = keys(ns)
    plain = (*lease_key[:-1], "plain")
    await store.put(plain, b"x", expected_version=0, ttl=30, indexed=False)
    async with count_round_trips(store) as unfenced:
        assert await store.delete(plain, expected_version=1, indexed=False)
    lease = Lease(store, lease_key, ttl=30)
    assert await lease.try_acquire()
    if after_a_long_call:
        lease._confirmed_at = float("-inf")  # as after a call longer than a third of the ttl
    async with count_round_trips(store) as fenced:
        await lease.release()
    assert lease.done and await store.get(lease_key) is None
    assert fenced.seen == unfenced.seen, (fenced.statements, unfenced.statements)
