"""Task claims on Redis, PostgreSQL and MariaDB: 1, 4 and 16 concurrent claimers spread over 4
processes, on the board's native path (:mod:`agentscope_teams.teams.queue`) and on the generic path
(``AGENTSCOPE_TEAMS_BOARD_NATIVE=0``, the old path kept as the baseline).

Each run creates a fresh team with ``tasks`` pending tasks; claimers (team members) loop
``claim_task`` (the next claimable task) + ``complete_task`` until the board is empty. The claimers
of a run are split over up to 4 worker processes (1 claimer: 1 process; 4: 4 x 1; 16: 4 x 4), which
start together at an agreed wall-clock instant. Reported per configuration, as the median over runs
± interquartile spread:

* claims per second (all claimers, from the start instant to the last claimer's empty claim);
* claim latency p50 (one ``claim_task`` call, the conflicts it absorbed included);
* conflicts per claim: conditional writes lost to another claimer inside ``claim_task``, counted by a
  thin store wrapper (each lost race costs a re-read and another attempt). Generic path only: the
  wrapper hides the backend, and a native claim has no conditional write to lose.

The baseline is one CAS put (``put(expected_version=n)`` of the size of a task record) on the same
backend, measured in the main process.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, cast

import anyio

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import VersionConflict
from agentscope_teams.store import BaseStore, Entry, Key, store_from_url
from agentscope_teams.store.base import get_many
from agentscope_teams.teams import LocalTeamClient
from agentscope_teams.teams.queues.base import NATIVE_ENV
from agentscope_teams.teams.rules.models import Member

from .fixtures import MYSQL_URL, POSTGRES_URL, REDIS_URL, drop_redis_namespace
from .stats import Sample, fmt, interleaved, ms, section, table, us, verdict

PROCESSES = 4
CLAIMERS = (1, 4, 16)
USER = "bench-claims"
PATHS = ("native", "generic")
SPEEDUP_TARGET = 5.0
#: Comma-separated backend names to measure (say ``postgres``); unset: every backend.
ONLY_ENV = "AGENTSCOPE_TEAMS_BENCH_BACKENDS"


def chosen(backends: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``backends`` narrowed to those named in :data:`ONLY_ENV`, when it is set."""
    only = {n.strip() for n in os.environ.get(ONLY_ENV, "").split(",") if n.strip()}
    return [b for b in backends if not only or b[0] in only]


class CountingStore:
    """Delegates to ``store``; counts ``VersionConflict`` from ``put`` while ``armed``."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store
        self.armed = False
        self.conflicts = 0

    async def get(self, key: Key) -> Entry | None:
        return await self.store.get(key)

    async def get_many(self, keys: Sequence[Key]) -> list[Entry | None]:
        return await get_many(self.store, keys)

    async def put(
        self,
        key: Key,
        value: bytes,
        *,
        expected_version: int | None = None,
        ttl: float | None = None,
    ) -> int:
        try:
            return await self.store.put(key, value, expected_version=expected_version, ttl=ttl)
        except VersionConflict:
            if self.armed:
                self.conflicts += 1
            raise

    async def delete(self, key: Key, *, expected_version: int | None = None) -> bool:
        return await self.store.delete(key, expected_version=expected_version)

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        return await self.store.list_keys(prefix, limit=limit, after=after)

    async def append(self, stream: Key, value: bytes) -> int:
        return await self.store.append(stream, value)

    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]:
        return await self.store.read(stream, after=after, limit=limit)

    async def delete_stream(self, stream: Key) -> bool:
        return await self.store.delete_stream(stream)

    async def aclose(self) -> None:
        """The wrapped store belongs to the caller."""

    async def __aenter__(self) -> CountingStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


# -- worker processes ------------------------------------------------------------------------------


def _ctx() -> RuntimeContext:
    return RuntimeContext(session_id="bench", user_id=USER)


def _store(url: str, namespace: str) -> BaseStore:
    options = {"namespace": namespace} if url.startswith("redis") else {}
    return store_from_url(url, **options)


def _warm(_: int) -> int:
    time.sleep(0.5)
    return os.getpid()


def _use_path(path: str) -> None:
    os.environ[NATIVE_ENV] = "1" if path == "native" else "0"


def worker(
    url: str, namespace: str, team_id: str, members: list[str], start_at: float, path: str
) -> dict[str, Any]:
    """One process's claimers (runs in a pool worker)."""
    _use_path(path)
    return anyio.run(_claimers, url, namespace, team_id, members, start_at, path)


async def _claimers(
    url: str, namespace: str, team_id: str, members: list[str], start_at: float, path: str
) -> dict[str, Any]:
    out: dict[str, Any] = {"claims": 0, "conflicts": 0, "latencies": [], "end": 0.0, "cpu": 0.0}
    async with _store(url, namespace) as store:
        views = [(m, CountingStore(store)) for m in members]
        # the native path needs the store itself (the wrapper would hide its queue)
        clients = [
            (m, LocalTeamClient(store if path == "native" else cast(BaseStore, c), _ctx()), c)
            for m, c in views
        ]
        await store.get(("teams", "o:", f"u:{USER}", "warm-up"))  # connect before the start
        await anyio.sleep(max(0.0, start_at - time.time()))
        cpu0 = time.process_time()

        async def claimer(member: str, client: LocalTeamClient, counting: CountingStore) -> None:
            while True:
                t0 = time.perf_counter()
                counting.armed = True
                task = await client.claim_task(team_id, member)
                counting.armed = False
                if task is None:
                    break
                out["latencies"].append(time.perf_counter() - t0)
                out["claims"] += 1
                await client.complete_task(team_id, member, task.id, "done")
            out["end"] = max(out["end"], time.time())

        async with anyio.create_task_group() as tg:
            for member, client, counting in clients:
                tg.start_soon(claimer, member, client, counting)
        out["cpu"] = time.process_time() - cpu0
        out["conflicts"] = sum(c.conflicts for _, c in views)
    return out


# -- the main process ------------------------------------------------------------------------------


@dataclass
class Run:
    claims_per_s: float
    p50: float
    conflicts_per_claim: float
    cpu_per_claim: float  # the claimer processes' CPU time per claim + complete


async def _prepare(url: str, namespace: str, tasks: int, members: int) -> str:
    async with _store(url, namespace) as store:
        client = LocalTeamClient(store, _ctx())
        team = await client.create_team(
            "bench", members=[Member(name=f"m{i}") for i in range(members)]
        )
        for i in range(tasks):
            await client.assign_task(team.id, f"task {i}")
    return team.id


async def _cleanup(url: str, namespace: str, team_id: str) -> None:
    async with _store(url, namespace) as store:
        await LocalTeamClient(store, _ctx()).delete_team(team_id)


async def _run_once(
    pool: ProcessPoolExecutor,
    url: str,
    namespace: str,
    claimers: int,
    tasks: int,
    lead: float,
    path: str,
) -> Run:
    _use_path(path)  # the tasks go to the index of the path under test
    team_id = await _prepare(url, namespace, tasks, max(CLAIMERS))
    names = [f"m{i}" for i in range(claimers)]
    groups = [names[p::PROCESSES] for p in range(min(PROCESSES, claimers))]
    start_at = time.time() + lead  # time for every worker to connect before the start
    futures = [pool.submit(worker, url, namespace, team_id, g, start_at, path) for g in groups]
    results = [await anyio.to_thread.run_sync(f.result) for f in futures]
    await _cleanup(url, namespace, team_id)
    claims = sum(r["claims"] for r in results)
    if claims != tasks:
        raise RuntimeError(f"{claims} claims for {tasks} tasks: a task was claimed twice or lost")
    elapsed = max(r["end"] for r in results) - start_at
    latencies = [x for r in results for x in r["latencies"]]
    conflicts = sum(r["conflicts"] for r in results)
    cpu = sum(r["cpu"] for r in results)
    return Run(claims / elapsed, statistics.median(latencies), conflicts / claims, cpu / claims)


async def _cas_put(url: str, namespace: str, ops: int, rounds: int) -> Sample:
    value = b"x" * 900  # about one task record
    key = ("teams", "o:", f"u:{USER}", "cas-baseline", uuid.uuid4().hex)
    async with _store(url, namespace) as store:
        version = [await store.put(key, value)]

        async def cas(_: int) -> None:
            version[0] = await store.put(key, value, expected_version=version[0])

        sample = (await interleaved({"cas": cas}, ops=ops, rounds=rounds))["cas"]
        await store.delete(key)
    return sample


async def run(fast: bool = False) -> str:
    tasks, runs, lead = (16, 1, 0.4) if fast else (160, 3, 1.0)
    ops, rounds = (10, 3) if fast else (100, 9)
    backends = chosen([("redis", REDIS_URL), ("postgres", POSTGRES_URL), ("mariadb", MYSQL_URL)])
    before = os.environ.get(NATIVE_ENV)
    rows: list[list[str]] = []
    verdicts: list[str] = []
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=PROCESSES, mp_context=ctx) as pool:
        # Start every worker (and its imports) before anything is timed.
        await anyio.to_thread.run_sync(lambda: list(pool.map(_warm, range(PROCESSES))))
        for name, url in backends:
            namespace = f"bench-claims-{uuid.uuid4().hex[:8]}"
            try:
                cas = await _cas_put(url, namespace, ops, rounds)
                measured: dict[tuple[str, int], list[Run]] = {}
                for _ in range(runs):  # the paths and sizes alternate run by run
                    for path in PATHS:
                        for claimers in CLAIMERS:
                            run_ = await _run_once(
                                pool, url, namespace, claimers, tasks, lead, path
                            )
                            measured.setdefault((path, claimers), []).append(run_)
            except Exception as exc:  # a service that is down: say so, keep the other rows
                verdicts.append(f"{name}: not measured ({type(exc).__name__}: {exc})")
                continue
            finally:
                if url.startswith("redis"):
                    await drop_redis_namespace(namespace)
                if before is None:
                    os.environ.pop(NATIVE_ENV, None)
                else:
                    os.environ[NATIVE_ENV] = before
            rows += _rows(name, cas, measured)
            verdicts += _verdicts(name, measured)
    head = [
        "backend",
        "path",
        "claimers",
        "processes",
        "claims/s",
        "claim p50 ms",
        "conflicts / claim",
        "claimer CPU ms / claim",
        "CAS put µs",
        "claim / CAS",
    ]
    intro = (
        f"{tasks} tasks per run, {runs} run(s) per configuration; each claimer loops claim_task + "
        "complete_task until the board is empty. Median over runs ± interquartile spread."
    )
    return section("Task claims: native and generic paths", intro, table(head, rows), verdicts)


def _sample(runs: list[Run], field: str) -> Sample:
    return Sample(field, [getattr(r, field) for r in runs])


def _rows(name: str, cas: Sample, measured: dict[tuple[str, int], list[Run]]) -> list[list[str]]:
    rows = []
    for (path, claimers), runs in measured.items():
        p50 = _sample(runs, "p50")
        conflicts = _sample(runs, "conflicts_per_claim")
        rows.append(
            [
                name,
                path,
                str(claimers),
                str(min(PROCESSES, claimers)),
                fmt(_sample(runs, "claims_per_s"), lambda x: f"{x:,.0f}"),
                fmt(p50, ms),
                fmt(conflicts, lambda x: f"{x:.2f}") if path == "generic" else "—",
                fmt(_sample(runs, "cpu_per_claim"), ms),
                fmt(cas, us),
                f"{p50.median / cas.median:.1f}",
            ]
        )
    return rows


def _verdicts(name: str, measured: dict[tuple[str, int], list[Run]]) -> list[str]:
    def rate(path: str, claimers: int) -> float:
        return _sample(measured[(path, claimers)], "claims_per_s").median

    four, sixteen = rate("native", 4), rate("native", 16)
    cores = os.cpu_count() or 1
    out = [
        f"{name}: native claims/s at 16 claimers ≥ at 4 (4 processes): {four:,.0f} → "
        f"{sixteen:,.0f} — "
        + verdict(
            sixteen >= four,
            f"4 worker processes plus the server share {cores} CPU(s) here; see the profile notes",
        )
    ]
    if name == "postgres":
        speedup = sixteen / rate("generic", 16)
        out.append(
            f"{name}: claims/s at 16 claimers, native vs generic ≥ {SPEEDUP_TARGET:.0f}x: "
            f"{speedup:.1f}x — " + verdict(speedup >= SPEEDUP_TARGET, "see the profile notes")
        )
    return out
