"""Entries: versions, compare-and-set, expiry and batched reads."""

from __future__ import annotations

import os

import pytest

from ..errors import LeaseLostError, VersionConflict
from ..store import Entry, StoreBackend
from ..store.base import MAX_TTL, Fence, fenced_deletes_of
from ._store_support import (
    TTL,
    wait_until_absent,
)


class EntryTests:
    """Entries: versions, compare-and-set, expiry and batched reads."""

    async def test_get_absent_returns_none(self, store: StoreBackend, ns: str) -> None:
        assert await store.get((ns, "missing")) is None

    async def test_put_counts_versions_from_one(self, store: StoreBackend, ns: str) -> None:
        key = (ns, "doc")
        assert await store.put(key, b"one") == 1
        assert await store.get(key) == Entry(b"one", 1)
        assert await store.put(key, b"two") == 2
        assert await store.get(key) == Entry(b"two", 2)
        assert await store.put(key, b"three") == 3
        assert await store.get(key) == Entry(b"three", 3)

    async def test_keys_hold_separate_values_and_versions(
        self, store: StoreBackend, ns: str
    ) -> None:
        await store.put((ns, "a"), b"A")
        await store.put((ns, "b"), b"B1")
        await store.put((ns, "b"), b"B2")
        assert await store.get((ns, "a")) == Entry(b"A", 1)
        assert await store.get((ns, "b")) == Entry(b"B2", 2)

    async def test_a_fenced_delete_deletes_only_while_the_key_holds_the_value(
        self, store: StoreBackend, ns: str
    ) -> None:
        """A store declaring ``fenced_delete``: a lease given back by its holder's value and
        version, so another holder's lease at the same version stays."""
        deletes = fenced_deletes_of(store)
        if deletes is None:
            pytest.skip("the store declares no fenced delete (capabilities.fenced_delete)")
        key = (ns, "lease")
        assert await store.put(key, b"other", expected_version=0) == 1
        with pytest.raises(LeaseLostError) as lost:
            await deletes.delete(key, expected_version=1, fence=Fence(key, b"mine"))
        assert (lost.value.key, lost.value.lease_key) == (key, key)
        assert await store.get(key) == Entry(b"other", 1)
        with pytest.raises(VersionConflict) as stale:
            await deletes.delete(key, expected_version=2, fence=Fence(key, b"other"))
        assert not isinstance(stale.value, LeaseLostError) and stale.value.found == 1
        assert await deletes.delete(key, expected_version=1, fence=Fence(key, b"other")) is True
        assert await store.get(key) is None

    async def test_create_only_succeeds_once(self, store: StoreBackend, ns: str) -> None:
        key = (ns, "lock")
        assert await store.put(key, b"first", expected_version=0) == 1
        with pytest.raises(VersionConflict) as info:
            await store.put(key, b"second", expected_version=0)
        assert info.value.key == key
        assert info.value.expected == 0
        assert info.value.found == 1
        assert await store.get(key) == Entry(b"first", 1)

    async def test_stale_version_is_rejected_and_writes_nothing(
        self, store: StoreBackend, ns: str
    ) -> None:
        key = (ns, "doc")
        await store.put(key, b"one")
        await store.put(key, b"two")
        with pytest.raises(VersionConflict) as info:
            await store.put(key, b"lost update", expected_version=1)
        assert (info.value.key, info.value.expected, info.value.found) == (key, 1, 2)
        assert await store.get(key) == Entry(b"two", 2)

    async def test_matching_version_succeeds(self, store: StoreBackend, ns: str) -> None:
        key = (ns, "doc")
        await store.put(key, b"one")
        assert await store.put(key, b"two", expected_version=1) == 2
        assert await store.put(key, b"three", expected_version=2) == 3
        assert await store.get(key) == Entry(b"three", 3)

    async def test_expected_version_on_absent_key_conflicts(
        self, store: StoreBackend, ns: str
    ) -> None:
        key = (ns, "never-written")
        with pytest.raises(VersionConflict) as info:
            await store.put(key, b"x", expected_version=1)
        assert info.value.key == key
        assert info.value.expected == 1
        assert info.value.found in (0, None)
        assert await store.get(key) is None

    async def test_delete_with_wrong_version_keeps_value(
        self, store: StoreBackend, ns: str
    ) -> None:
        key = (ns, "doc")
        await store.put(key, b"one")
        await store.put(key, b"two")
        with pytest.raises(VersionConflict) as info:
            await store.delete(key, expected_version=1)
        assert (info.value.key, info.value.expected, info.value.found) == (key, 1, 2)
        assert await store.get(key) == Entry(b"two", 2)

    async def test_delete_with_right_version_deletes(self, store: StoreBackend, ns: str) -> None:
        key = (ns, "doc")
        await store.put(key, b"one")
        await store.put(key, b"two")
        assert await store.delete(key, expected_version=2) is True
        assert await store.get(key) is None
        assert await store.list_keys((ns,)) == []

    async def test_unconditional_delete_then_delete_absent(
        self, store: StoreBackend, ns: str
    ) -> None:
        key = (ns, "doc")
        await store.put(key, b"v")
        assert await store.delete(key) is True
        assert await store.get(key) is None
        assert await store.delete(key) is False
        assert await store.delete((ns, "never-written")) is False

    async def test_recreate_after_delete_restarts_at_version_one(
        self, store: StoreBackend, ns: str
    ) -> None:
        key = (ns, "doc")
        await store.put(key, b"one")
        await store.put(key, b"two")
        await store.delete(key)
        assert await store.put(key, b"again", expected_version=0) == 1
        assert await store.get(key) == Entry(b"again", 1)
        with pytest.raises(VersionConflict):
            await store.put(key, b"stale", expected_version=2)
        assert await store.get(key) == Entry(b"again", 1)

    async def test_ttl_entry_is_present_then_expires(self, store: StoreBackend, ns: str) -> None:
        key = (ns, "lease")
        assert await store.put(key, b"held", ttl=TTL) == 1
        assert await store.get(key) == Entry(b"held", 1)
        await wait_until_absent(store, key)
        assert await store.get(key) is None

    async def test_expired_key_is_absent_for_cas_delete_and_listing(
        self, store: StoreBackend, ns: str
    ) -> None:
        # The keys written first expire no later than ``probe``; once ``probe`` is gone they are expired
        # too, and we check them without a get() that could have cleaned them up as a side effect.
        for_delete, for_cas, for_conflict, probe = (
            (ns, "ttl", "del"),
            (ns, "ttl", "cas"),
            (ns, "ttl", "conflict"),
            (ns, "ttl", "probe"),
        )
        keep = (ns, "ttl", "keep")
        await store.put(for_cas, b"old", ttl=TTL)
        await store.put(for_cas, b"old2", ttl=TTL)  # version 2 before it expires
        for key in (for_delete, for_conflict, probe):
            await store.put(key, b"old", ttl=TTL)
        await store.put(keep, b"kept")
        await wait_until_absent(store, probe)

        assert await store.list_keys((ns, "ttl")) == [keep]
        assert await store.list_keys((ns,)) == [keep]
        assert await store.delete(for_delete) is False
        with pytest.raises(VersionConflict) as info:
            await store.put(for_conflict, b"new", expected_version=1)
        assert info.value.found in (0, None)
        assert await store.put(for_cas, b"new", expected_version=0) == 1
        assert await store.get(for_cas) == Entry(b"new", 1)
        assert await store.get(keep) == Entry(b"kept", 1)

    async def test_get_many_reads_like_get_in_order(self, store: StoreBackend, ns: str) -> None:
        a, b, gone, absent = (ns, "m", "a"), (ns, "m", "b"), (ns, "m", "gone"), (ns, "m", "absent")
        await store.put(a, b"one")
        await store.put(b, b"two")
        await store.put(b, b"two again")
        await store.put(gone, b"x")
        await store.delete(gone)
        keys = [b, absent, a, gone, b]  # any order, repeats and absent keys allowed
        assert await store.get_many(keys) == [await store.get(k) for k in keys]
        two, one = Entry(b"two again", 2), Entry(b"one", 1)
        assert await store.get_many(keys) == [two, None, one, None, two]
        assert await store.get_many([]) == []

    async def test_get_many_of_a_large_batch(self, store: StoreBackend, ns: str) -> None:
        keys = [(ns, "batch", f"k{i:04d}") for i in range(1200)]  # over one SQL chunk
        for i, key in enumerate(keys[::3]):
            await store.put(key, str(i).encode())
        found = await store.get_many(keys)
        assert [e.value if e else None for e in found] == [
            str(i // 3).encode() if i % 3 == 0 else None for i in range(len(keys))
        ]

    async def test_get_many_chunked_value_and_expired_entry(
        self, store: StoreBackend, ns: str
    ) -> None:
        big, short = (ns, "gm", "big"), (ns, "gm", "short")
        data = os.urandom((1 << 20) + 17)  # over the SQL chunk size: stored in parts
        await store.put(big, data)
        await store.put(short, b"soon gone", ttl=TTL)
        await wait_until_absent(store, short)
        assert await store.get_many([short, big]) == [None, Entry(data, 1)]

    async def test_get_many_rejects_invalid_keys(self, store: StoreBackend, ns: str) -> None:
        with pytest.raises(ValueError):
            await store.get_many([(ns, "ok"), (ns, "")])

    async def test_rewrite_replaces_the_ttl(self, store: StoreBackend, ns: str) -> None:
        renewed, made_permanent, probe = (ns, "renewed"), (ns, "permanent"), (ns, "probe")
        await store.put(renewed, b"v1", ttl=TTL)
        await store.put(made_permanent, b"v1", ttl=TTL)
        assert await store.put(renewed, b"v2", ttl=600) == 2
        assert await store.put(made_permanent, b"v2", expected_version=1) == 2
        # ``probe`` is written after both rewrites with the original ttl: once it has expired, the
        # original ttl of the other two has passed as well.
        await store.put(probe, b"p", ttl=TTL)
        await wait_until_absent(store, probe)
        assert await store.get(renewed) == Entry(b"v2", 2)
        assert await store.get(made_permanent) == Entry(b"v2", 2)

    async def test_non_positive_ttl_is_rejected(self, store: StoreBackend, ns: str) -> None:
        for ttl in (0, -1.0):
            with pytest.raises(ValueError, match="ttl"):
                await store.put((ns, "k"), b"v", ttl=ttl)
        assert await store.get((ns, "k")) is None

    async def test_a_ttl_no_backend_can_hold_is_rejected(
        self, store: StoreBackend, ns: str
    ) -> None:
        for ttl in (float("inf"), float("nan"), MAX_TTL + 1, 1e300):
            with pytest.raises(ValueError, match="ttl"):
                await store.put((ns, "k"), b"v", ttl=ttl)
        assert await store.get((ns, "k")) is None
        assert await store.put((ns, "k"), b"v", ttl=MAX_TTL) == 1  # the longest one is held
        assert await store.get((ns, "k")) == Entry(b"v", 1)
