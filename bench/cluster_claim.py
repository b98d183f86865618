"""A task claim on Redis Cluster vs on a single Redis server (issue 13: target <= 1.3x).

The bench starts its own servers with the installed ``redis-server``: one standalone server and a
6-node cluster (3 primaries + 3 replicas, ``tests/_redis_cluster.py``), on free loopback ports, so
both sides run the same binary with the same (empty) load. One claimer claims the next task
(``claim_task``, timed) and completes it (untimed) on a board of its own on each side, the two
sides alternating round by round. A CAS put of a 1 KiB value is measured the same way: it shows
what the cluster client adds per command (slot routing), which the claim pays once per store call.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store.redis import RedisStore
from agentscope_teams.teams import LocalTeamClient
from agentscope_teams.teams.rules.models import Member

from .stats import Sample, fmt, ms, section, table, us, verdict

TARGET = 1.3
#: The repository root: the cluster comes from the tests' fixture module.
_REPO = str(Path(__file__).resolve().parents[1])


@contextlib.contextmanager
def _single_server(workdir: Path) -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = shutil.which("redis-server") or "redis-server"
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir),
         "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.05)
        yield port
    finally:
        proc.kill()
        proc.wait(timeout=10)


class _Side:
    """One store with a team of pending tasks and one claimer."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self.client = LocalTeamClient(store, RuntimeContext(session_id="b", user_id="bench-cl"))
        self.team_id = ""
        self.claims: list[float] = []
        self.puts: list[float] = []

    async def prepare(self, tasks: int) -> None:
        team = await self.client.create_team("claims", members=[Member(name="b")])
        self.team_id = team.id
        for i in range(tasks):
            await self.client.assign_task(self.team_id, f"job {i}")
        await self.store.put(("bench", "cas", "key"), b"x" * 1024)

    async def round(self, claims: int) -> None:
        times = []
        for _ in range(claims):
            t0 = time.perf_counter()
            task = await self.client.claim_task(self.team_id, "b")
            times.append(time.perf_counter() - t0)
            assert task is not None
            await self.client.complete_task(self.team_id, "b", task.id, "done")
        self.claims.append(statistics.median(times))
        entry = await self.store.get(("bench", "cas", "key"))
        version = entry.version if entry else 0
        t0 = time.perf_counter()
        for _ in range(claims):
            version = await self.store.put(
                ("bench", "cas", "key"), b"x" * 1024, expected_version=version
            )
        self.puts.append((time.perf_counter() - t0) / claims)


async def _measure(rounds: int, per_round: int) -> tuple[_Side, _Side]:
    if _REPO not in sys.path:
        sys.path.insert(0, _REPO)
    from tests._redis_cluster import LocalCluster

    with tempfile.TemporaryDirectory() as tmp, _single_server(Path(tmp)) as port:
        cluster = LocalCluster(Path(tmp) / "cluster")
        cluster.start()
        try:
            async with (
                RedisStore(f"redis://127.0.0.1:{port}/0") as single_store,
                RedisStore(cluster.url) as cluster_store,
            ):
                single = _Side(single_store)
                on_cluster = _Side(cluster_store)
                for side in (single, on_cluster):
                    await side.prepare(rounds * per_round)
                for _ in range(rounds):
                    for side in (single, on_cluster):
                        await side.round(per_round)
                return single, on_cluster
        finally:
            cluster.stop()


async def run(fast: bool = False) -> str:
    rounds, per_round = (3, 10) if fast else (9, 40)
    title = "Claim on Redis Cluster vs a single Redis server"
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        return section(title, "redis-server / redis-cli not installed: not measured.", "", [])
    single, on_cluster = await _measure(rounds, per_round)
    claim = {s: Sample(n, s.claims) for s, n in ((single, "single"), (on_cluster, "cluster"))}
    put = {s: Sample(n, s.puts) for s, n in ((single, "single"), (on_cluster, "cluster"))}
    cost = claim[on_cluster].median / claim[single].median
    put_cost = put[on_cluster].median / put[single].median
    rows = [
        [name, fmt(claim[side], ms), fmt(put[side], us)]
        for side, name in ((single, "single server"), (on_cluster, "cluster (3 primaries)"))
    ]
    rows.append(["cluster / single", f"{cost:.2f}", f"{put_cost:.2f}"])
    intro = (
        f"Both sides started by the bench with the installed redis-server on loopback; one claimer, "
        f"{rounds} rounds of {per_round} claims per side, the sides alternating; median of the "
        "round medians ± interquartile spread (the CAS put: mean per put of each round)."
    )
    head = ["server", "claim ms", "CAS put µs"]
    verdicts = [
        f"cluster claim ≤ {TARGET}x single-node claim: {cost:.2f}x — "
        + verdict(cost <= TARGET, "see the profile notes")
    ]
    return section(title, intro, table(head, rows), verdicts)
