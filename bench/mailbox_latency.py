"""Mailbox latency: send-to-read p50 / p99, one recipient and a broadcast to 50 members.

Per backend, a team of a lead and 50 members:

* baseline: one ``store.append`` to a stream + one ``store.read`` after the previous seq (what a
  message costs the store, without the team layer);
* ``send_message`` (lead → m0) then ``read_messages`` by m0 after its cursor;
* ``broadcast_message`` (lead → all 50 members) then ``read_messages`` by the last member.

Each sample is the time from the send call to the read that returns the message. p50 and p99 are taken
per round; the table shows their medians over rounds ± interquartile spread.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient
from agentscope_teams.teams.rules.models import Member

from .fixtures import POSTGRES_URL, REDIS_URL, drop_redis_namespace
from .stats import Sample, fmt, percentile, section, table, us

MEMBERS = 50
Probe = Callable[[], Awaitable[float]]


async def _probes(store: BaseStore) -> tuple[dict[str, Probe], Callable[[], Awaitable[None]]]:
    client = LocalTeamClient(store, RuntimeContext(session_id="bench", user_id="bench-mail"))
    team = await client.create_team("mail", members=[Member(name=f"m{i}") for i in range(MEMBERS)])
    last = f"m{MEMBERS - 1}"
    cursors = {"m0": 0, last: 0, "raw": 0}
    stream = ("bench", "o:", "u:bench-mail", "raw", uuid.uuid4().hex)
    payload = b'{"sender": "lead", "recipient": "m0", "content": "status?"}'

    async def raw() -> float:
        t0 = time.perf_counter()
        seq = await store.append(stream, payload)
        rows = await store.read(stream, after=cursors["raw"])
        assert rows and rows[-1][0] == seq
        cursors["raw"] = seq
        return time.perf_counter() - t0

    async def send() -> float:
        t0 = time.perf_counter()
        sent = await client.send_message(team.id, "lead", "m0", "status?")
        got = await client.read_messages(team.id, "m0", after=cursors["m0"])
        assert got and got[-1].seq == sent.seq
        cursors["m0"] = sent.seq
        return time.perf_counter() - t0

    async def broadcast() -> float:
        t0 = time.perf_counter()
        sent = await client.broadcast_message(team.id, "lead", "all hands")
        got = await client.read_messages(team.id, last, after=cursors[last])
        assert len(sent) == MEMBERS and got and got[-1].content == "all hands"
        cursors[last] = got[-1].seq
        return time.perf_counter() - t0

    async def cleanup() -> None:
        await store.delete_stream(stream)
        await client.delete_team(team.id)

    return {"raw": raw, "send": send, "broadcast": broadcast}, cleanup


async def _measure(
    url: str, samples: dict[str, int], rounds: int
) -> dict[str, tuple[Sample, Sample]]:
    namespace = f"bench-mail-{uuid.uuid4().hex[:8]}"
    options = {"namespace": namespace} if url.startswith("redis") else {}
    try:
        async with store_from_url(url, **options) as store:
            probes, cleanup = await _probes(store)
            try:
                for probe in probes.values():
                    await probe()  # warm-up
                p50: dict[str, list[float]] = {n: [] for n in probes}
                p99: dict[str, list[float]] = {n: [] for n in probes}
                for _ in range(rounds):
                    for name, probe in probes.items():
                        lat = [await probe() for _ in range(samples[name])]
                        p50[name].append(percentile(lat, 50))
                        p99[name].append(percentile(lat, 99))
            finally:
                await cleanup()
    finally:
        if url.startswith("redis"):
            await drop_redis_namespace(namespace)
    return {n: (Sample(n, p50[n]), Sample(n, p99[n])) for n in probes}


async def run(fast: bool = False) -> str:
    rounds = 1 if fast else 7
    samples = (
        {"raw": 10, "send": 10, "broadcast": 3}
        if fast
        else {
            "raw": 200,
            "send": 200,
            "broadcast": 40,
        }
    )
    labels = {
        "raw": "store append + read (baseline)",
        "send": "send_message → read_messages",
        "broadcast": f"broadcast_message to {MEMBERS} → last member reads",
    }
    rows: list[list[str]] = []
    notes: list[str] = []
    for backend, url in (("memory", "memory://"), ("redis", REDIS_URL), ("postgres", POSTGRES_URL)):
        try:
            result = await _measure(url, samples, rounds)
        except Exception as exc:  # a service that is down: say so, keep the other rows
            notes.append(f"{backend}: not measured ({type(exc).__name__}: {exc})")
            continue
        base = result["raw"][0].median
        for name, (p50, p99) in result.items():
            rows.append(
                [
                    backend,
                    labels[name],
                    fmt(p50, us),
                    fmt(p99, us),
                    f"{p50.median / base:.1f}",
                ]
            )
    body = table(["backend", "path", "p50 µs", "p99 µs", "p50 x baseline"], rows)
    intro = (
        f"Send-to-read latency; {samples['send']} messages / {samples['broadcast']} broadcasts per "
        f"round, {rounds} round(s); per-round percentiles, median over rounds ± interquartile spread."
    )
    verdicts = [
        "reported (no target): a broadcast is one append per recipient, up to 4 concurrently (in sequence on memory)"
    ]
    return section("Mailbox send-to-read latency", intro, body, verdicts + notes)
