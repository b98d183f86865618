"""Multi-process contention: real OS processes (``spawn``) sharing one store through its URL.

Runs for every backend that is shared across processes; the in-memory store is skipped.
"""

from __future__ import annotations

import multiprocessing
from functools import partial
from itertools import pairwise
from typing import Any

import pytest

from agentscope_teams.store import Entry, StoreBackend

from ..backends import SHARED_BACKENDS, StoreSpec
from .helpers import (
    RUN_TIMEOUT,
    append_entries,
    cas_increments,
    create_only,
    lease_holder,
    run_workers,
)

pytestmark = pytest.mark.slow

WORKERS = 4
INCREMENTS = 50
APPENDS = 100
CREATE_KEYS = 25


@pytest.fixture
def shared_store(store: StoreBackend, store_spec: StoreSpec) -> StoreBackend:
    """The parent's store (its setup has run), skipping stores that live in one process."""
    if not store.shared_across_processes:
        assert store_spec.backend not in SHARED_BACKENDS, (
            f"{type(store).__name__} must be shared across processes"
        )
        pytest.skip(f"{type(store).__name__} is process-local")
    return store


async def test_cas_increments_from_processes_lose_nothing(
    shared_store: StoreBackend, store_spec: StoreSpec, ns: str
) -> None:
    key = (ns, "counter")
    job = partial(cas_increments, key, INCREMENTS)
    conflicts = run_workers(store_spec, job, WORKERS)
    total = WORKERS * INCREMENTS
    entry = await shared_store.get(key)
    assert entry == Entry(str(total).encode(), total), f"conflicts retried per worker: {conflicts}"


async def test_appends_from_processes_get_unique_increasing_seqs(
    shared_store: StoreBackend, store_spec: StoreSpec, ns: str
) -> None:
    stream = (ns, "events")
    returned: list[list[int]] = run_workers(
        store_spec, partial(append_entries, stream, APPENDS), WORKERS
    )
    all_returned = [s for seqs in returned for s in seqs]
    assert len(set(all_returned)) == WORKERS * APPENDS, "append handed out a seq twice"

    entries: list[tuple[int, bytes]] = []
    after = 0
    while page := await shared_store.read(stream, after=after, limit=100):
        entries.extend(page)
        after = page[-1][0]
    seqs = [seq for seq, _ in entries]
    assert all(b > a for a, b in pairwise(seqs)), "read order not increasing"
    payloads = [value.decode() for _, value in entries]
    expected = {f"{w}:{i}" for w in range(WORKERS) for i in range(APPENDS)}
    assert len(payloads) == WORKERS * APPENDS
    assert set(payloads) == expected

    seq_of = {value.decode(): seq for seq, value in entries}
    for w, seqs_w in enumerate(returned):
        assert seqs_w == [seq_of[f"{w}:{i}"] for i in range(APPENDS)], f"worker {w}"
        assert seqs_w == sorted(seqs_w), f"worker {w}: its own appends are out of order"


async def test_create_only_has_one_winner_per_key_across_processes(
    shared_store: StoreBackend, store_spec: StoreSpec, ns: str
) -> None:
    keys = [(ns, "claim", f"{i:02d}") for i in range(CREATE_KEYS)]
    won: list[list[int]] = run_workers(store_spec, partial(create_only, keys), WORKERS)
    winners = {i: [w for w in range(WORKERS) if i in won[w]] for i in range(CREATE_KEYS)}
    assert all(len(ws) == 1 for ws in winners.values()), winners
    for i, key in enumerate(keys):
        assert await shared_store.get(key) == Entry(str(winners[i][0]).encode(), 1), key


async def test_a_holder_force_deleted_in_one_process_does_not_release_the_next_in_another(
    shared_store: StoreBackend, store_spec: StoreSpec, ns: str
) -> None:
    """Two processes: the first holds the session lease; an operator force-deletes it; the second
    takes it, at version 1 again. The first one's release (its call ends) leaves the second's
    lease, whose fenced saves go on; before fenced deletes it deleted it by version alone."""
    key, record = ("leases", ns, "u", "a", "s"), ("sessions", ns, "u", "a", "s")
    ctx = multiprocessing.get_context("spawn")
    first = (ctx.Queue(), ctx.Queue())  # (orders, reports) of each holder
    second = (ctx.Queue(), ctx.Queue())
    procs = []
    try:
        for orders, reports in (first, second):
            proc = ctx.Process(
                target=lease_holder, args=(store_spec, key, record, orders, reports), daemon=True
            )
            proc.start()
            procs.append(proc)
            if orders is first[0]:
                assert _report(reports) == ("held", 1)
                assert await shared_store.delete(key, indexed=False)  # the operator's force-delete
        assert _report(second[1]) == ("held", 1)
        first[0].put("release")
        assert _report(first[1]) == ("release", "ok")
        second[0].put("save")
        assert _report(second[1]) == ("save", "ok")  # it still holds its lease
        held = await shared_store.get(key)
        assert held is not None and held.version == 1
        second[0].put("release")
        assert _report(second[1]) == ("release", "ok")
        assert await shared_store.get(key) is None
    finally:
        for orders, _ in (first, second):
            orders.put("exit")
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()


def _report(reports: Any) -> tuple[str, object]:
    found: tuple[str, object] = reports.get(timeout=RUN_TIMEOUT)
    assert found[0] != "error", found[1]
    return found
