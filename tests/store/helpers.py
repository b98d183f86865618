"""Child-process entry points for ``test_contention.py``.

Children are started with the ``spawn`` context, so everything here is importable and picklable: each
child re-opens the store from the :class:`StoreSpec`, waits on a shared barrier so the workers really
overlap, does its work and sends ``(worker, "ok", result)`` or ``(worker, "error", traceback)`` back.
"""

from __future__ import annotations

import multiprocessing
import queue as queue_module
import traceback
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import anyio

from agentscope_teams.errors import VersionConflict
from agentscope_teams.store import Key, StoreBackend

from ..backends import StoreSpec

#: Upper bound for a whole multi-process run; only a hang guard, never a performance assertion.
RUN_TIMEOUT = 180.0
BARRIER_TIMEOUT = 120.0

Job = Callable[[StoreBackend, int], Awaitable[Any]]


async def cas_increments(key: Key, n: int, store: StoreBackend, worker: int) -> int:
    """Add 1 to the counter at ``key`` ``n`` times with read / conditional put / retry.

    Returns how many conflicts this worker had to retry (for the failure message only).
    """
    conflicts = 0
    for _ in range(n):
        while True:
            entry = await store.get(key)
            count, version = (0, 0) if entry is None else (int(entry.value), entry.version)
            try:
                await store.put(key, str(count + 1).encode(), expected_version=version)
            except VersionConflict:
                conflicts += 1
                continue
            break
    return conflicts


async def append_entries(stream: Key, m: int, store: StoreBackend, worker: int) -> list[int]:
    """Append ``m`` payloads ``b"<worker>:<i>"``; return the seqs the store handed out, in order."""
    return [await store.append(stream, f"{worker}:{i}".encode()) for i in range(m)]


async def create_only(keys: list[Key], store: StoreBackend, worker: int) -> list[int]:
    """Try to create every key with ``expected_version=0``; return the indexes this worker won."""
    won = []
    for i, key in enumerate(keys):
        try:
            await store.put(key, str(worker).encode(), expected_version=0)
        except VersionConflict:
            continue
        won.append(i)
    return won


async def _child_main(spec: StoreSpec, barrier: Any, job: Job, worker: int) -> Any:
    async with spec.open() as store:
        await anyio.to_thread.run_sync(partial(barrier.wait, BARRIER_TIMEOUT))
        return await job(store, worker)


def _child(spec: StoreSpec, barrier: Any, results: Any, job: Job, worker: int) -> None:
    try:
        result = anyio.run(_child_main, spec, barrier, job, worker)
    except BaseException:
        results.put((worker, "error", traceback.format_exc()))
    else:
        results.put((worker, "ok", result))


def run_workers(spec: StoreSpec, job: Job, workers: int) -> list[Any]:
    """Run ``job(store, worker)`` in ``workers`` spawned processes; return results by worker index.

    Raises ``AssertionError`` with the child's traceback when a worker fails or hangs.
    """
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    barrier = ctx.Barrier(workers)
    procs = [
        ctx.Process(target=_child, args=(spec, barrier, results, job, w), daemon=True)
        for w in range(workers)
    ]
    for p in procs:
        p.start()
    out: dict[int, Any] = {}
    errors: list[str] = []
    try:
        for _ in procs:
            try:
                worker, status, payload = results.get(timeout=RUN_TIMEOUT)
            except queue_module.Empty:
                errors.append(f"no result from a worker within {RUN_TIMEOUT}s")
                break
            if status == "ok":
                out[worker] = payload
            else:
                errors.append(f"worker {worker} failed:\n{payload}")
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
    assert not errors, "\n".join(errors)
    return [out[w] for w in range(workers)]


def lease_holder(spec: StoreSpec, key: Key, record: Key, steps: Any, results: Any) -> None:
    """A process that holds the lease at ``key`` as a call does: it takes it, says so
    (``"held"``), then, each time ``steps`` hands it an order, carries it out and reports:
    ``"save"`` (a save of ``record`` fenced by the lease), ``"release"`` (:meth:`Lease.release`)."""
    from agentscope_teams.agent.lease import Lease, acquire

    async def main() -> None:
        async with spec.open() as store:
            lease = Lease(store, key, ttl=60)
            await acquire(lease, RUN_TIMEOUT)
            results.put(("held", lease.version))
            while (order := await anyio.to_thread.run_sync(steps.get, True, RUN_TIMEOUT)) != "exit":
                try:
                    if order == "save":
                        await store.put(record, b"saved", fence=lease.fence())
                    else:
                        await lease.release()
                except Exception as exc:
                    results.put((order, type(exc).__name__))
                else:
                    results.put((order, "ok"))

    try:
        anyio.run(main)
    except BaseException:
        results.put(("error", traceback.format_exc()))
