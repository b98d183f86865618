"""The cost of ``replica_acks=1`` per write: a CAS put (1 KiB) and a task claim + completion with
every write confirmed by a replica, against the same with ``replica_acks=0``.

The bench starts its own primary and replica (``replicaof``) with the installed ``redis-server``
(``tests/_redis_cluster.py``'s ``LocalPair``), on free loopback ports. Both stores write to the same
primary; the two sides alternate round by round, so the machine's load falls on both alike.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store.redis import RedisStore
from agentscope_teams.teams import LocalTeamClient
from agentscope_teams.teams.rules.models import Member

from .stats import compare, fmt, section, table, timed, us

_REPO = str(Path(__file__).resolve().parents[1])


async def _sides(store: RedisStore, name: str, tasks: int) -> dict[str, Any]:
    """A CAS put op and a claim + complete op on ``store`` (a board of ``tasks`` of its own)."""
    key = ("bench", name, "key")
    version = [await store.put(key, b"x" * 1024)]
    client = LocalTeamClient(store, RuntimeContext(session_id="b", user_id=f"bench-{name}"))
    team = await client.create_team("acks", members=[Member(name="b")])
    for i in range(tasks):
        await client.assign_task(team.id, f"job {i}")

    async def put(i: int) -> None:
        version[0] = await store.put(key, b"x" * 1024, expected_version=version[0])

    async def claim(i: int) -> None:
        task = await client.claim_task(team.id, "b")
        assert task is not None
        await client.complete_task(team.id, "b", task.id, "done")

    return {"put": put, "claim": claim}


async def _measure(rounds: int, ops: int) -> dict[str, Any]:
    if _REPO not in sys.path:
        sys.path.insert(0, _REPO)
    from tests._redis_cluster import LocalPair

    with tempfile.TemporaryDirectory() as tmp:
        pair = LocalPair(Path(tmp))
        pair.start()
        try:
            async with (
                RedisStore(pair.url, namespace="b0") as plain,
                RedisStore(pair.url, namespace="b1", replica_acks=1) as acked,
            ):
                tasks = (rounds + 2) * ops
                ops0, ops1 = await _sides(plain, "0", tasks), await _sides(acked, "1", tasks)
                out = {}
                for kind in ("put", "claim"):
                    named = {"acks=0": timed(ops0[kind]), "acks=1": timed(ops1[kind])}
                    out[kind] = await compare(named, ops=ops, rounds=rounds)
                return out
        finally:
            pair.stop()


async def run(fast: bool = False) -> str:
    rounds, ops = (3, 20) if fast else (15, 100)
    title = "Writes confirmed by a replica (replica_acks=1) vs unconfirmed"
    if shutil.which("redis-server") is None:
        return section(title, "redis-server not installed: not measured.", "", [])
    found = await _measure(rounds, ops)
    rows = []
    for kind, label in (("put", "CAS put 1 KiB"), ("claim", "claim + complete")):
        a0, a1 = found[kind]["acks=0"], found[kind]["acks=1"]
        rows.append([label, fmt(a0, us), fmt(a1, us), f"{a1.median / a0.median:.2f}"])
    intro = (
        "A private primary + replica started by the bench on loopback; one caller, "
        f"{rounds} rounds of {ops} operations per side, the sides alternating; median of the round "
        "means ± interquartile spread. The claim + complete is two script calls (two WAITs)."
    )
    head = ["operation", "replica_acks=0 µs", "replica_acks=1 µs", "ratio"]
    return section(title, intro, table(head, rows), [])
