"""Session round trip on Redis: ``get_session`` + ``update_session_state`` of a 50-message state.

Side by side, interleaved round by round on the same Redis server:

* raw redis-py ``GET`` + ``SET`` of the very bytes agentscope_teams stores (the floor: two round
  trips, no parsing);
* ``RedisStore.get`` + CAS ``put`` of the same bytes (the store's share: a hash read, a Lua CAS);
* agentscope_teams ``RedisStorage`` (``SessionStorage`` over ``RedisStore``);
* the CPU part alone: parsing the whole record into pydantic models and serializing it back (no
  I/O), which is what a whole-value round trip adds to the raw floor (a segmented record, which
  Redis keeps from the first rewrite on, skips it for the history the process has seen);
* with ``AGENTSCOPE_TEAMS_BASELINE_PATH`` naming another agentscope-teams tree (e.g. main), that
  tree's ``RedisStorage`` round trip in a worker process (``baseline_session.py``): before/after;
* AgentScope 2.0.11 ``RedisStorage`` with the same conversation in its own message types, run by
  ``anchor_session.py`` in the anchor virtualenv (skipped with a note when that is absent).
"""

from __future__ import annotations

import json
import tempfile
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

from agentscope_teams.sessions import RedisStorage, session_key
from agentscope_teams.store.base import Entry

from .anchor import Anchor, AnchorError, anchor_python, baseline_path, skip_note
from .fixtures import REDIS_URL, conversation, state_from
from .stats import RoundFn, Sample, compare, fmt, ratio, section, table, timed, verdict

RAW_TARGET = 2.5
ANCHOR_TARGET = 3.0


async def run(fast: bool = False) -> str:
    ops, rounds = (5, 3) if fast else (40, 15)
    spec = conversation(50)
    user, agent, sid = "bench", "agent", "s-" + uuid.uuid4().hex
    key = session_key(None, user, agent, sid)
    async with RedisStorage(url=REDIS_URL) as storage:
        await storage.upsert_session(
            user_id=user, agent_id=agent, session_id=sid, state=state_from(spec, sid)
        )
        entry = await storage.store.get(key)
        assert entry is not None
        try:
            samples, anchor_bytes, note = await _measure(storage, sid, entry, spec, ops, rounds)
        finally:
            await storage.delete_session(user, agent, sid)
    return _report(samples, len(entry.value), anchor_bytes, note)


async def _measure(
    storage: RedisStorage,
    sid: str,
    entry: Entry,
    spec: list[dict[str, object]],
    ops: int,
    rounds: int,
) -> tuple[dict[str, Sample], int | None, str]:
    import redis.asyncio as aioredis

    user, agent = "bench", "agent"
    raw_key = f"bench-raw-{uuid.uuid4().hex}"
    client = aioredis.Redis.from_url(REDIS_URL)

    async def raw(_: int) -> None:
        await client.get(raw_key)
        await client.set(raw_key, entry.value)

    async def ours(_: int) -> None:
        record = await storage.get_session(user, agent, sid)
        assert record is not None
        await storage.update_session_state(
            user_id=user, agent_id=agent, session_id=sid, state=record.state
        )

    # the persisted record: what the storage parses
    from agentscope_teams.sessions import SessionBody

    async def cpu(_: int) -> None:
        SessionBody.model_validate_json(entry.value).model_dump_json()

    store_key = ("bench", "o:", "u:bench", "bytes", uuid.uuid4().hex)
    version = [await storage.store.put(store_key, entry.value)]

    async def store_only(_: int) -> None:
        got = await storage.store.get(store_key)
        assert got is not None
        version[0] = await storage.store.put(store_key, got.value, expected_version=version[0])

    named: dict[str, RoundFn] = {
        "raw": timed(raw),
        "store": timed(store_only),
        "ours": timed(ours),
        "cpu": timed(cpu),
    }
    note = ""
    anchor_bytes: int | None = None
    stack = AsyncExitStack()
    try:
        path = baseline_path()
        if path is not None:
            worker = Anchor("baseline_session.py", REDIS_URL, "roundtrip", "50", baseline=path)
            named["baseline"] = (await stack.enter_async_context(worker)).round
        await client.set(raw_key, entry.value)
        with tempfile.TemporaryDirectory() as tmp:
            spec_file = Path(tmp) / "conversation.json"
            spec_file.write_text(json.dumps(spec))
            if anchor_python() is None:
                return await compare(named, ops=ops, rounds=rounds), None, skip_note()
            try:
                async with Anchor("anchor_session.py", REDIS_URL, str(spec_file)) as anchor:
                    anchor_bytes = int(anchor.ready["bytes"])
                    named["anchor"] = anchor.round
                    samples = await compare(named, ops=ops, rounds=rounds)
            except AnchorError as exc:
                note = f"anchor failed: {exc}"
                named.pop("anchor", None)
                samples = await compare(named, ops=ops, rounds=rounds)
    finally:
        await stack.aclose()
        await storage.store.delete(store_key)
        await client.delete(raw_key)
        await client.aclose()
    return samples, anchor_bytes, note


def _report(s: dict[str, Sample], size: int, anchor_bytes: int | None, note: str) -> str:
    raw = s["raw"]
    rows = [
        ["raw redis-py GET + SET of the same bytes", f"{size:,}", fmt(raw), "1.00"],
        [
            "RedisStore get + CAS put of the same bytes (no parsing)",
            f"{size:,}",
            fmt(s["store"]),
            f"{ratio(s['store'], raw):.2f}",
        ],
        [
            "agentscope_teams RedisStorage",
            f"{size:,}",
            fmt(s["ours"]),
            f"{ratio(s['ours'], raw):.2f}",
        ],
        [
            "parse + serialize the whole record (no I/O; the whole-value layout's CPU)",
            f"{size:,}",
            fmt(s["cpu"]),
            f"{ratio(s['cpu'], raw):.2f}",
        ],
    ]
    if "baseline" in s:
        rows.append(
            [
                "before: the baseline tree's RedisStorage (whole-value record)",
                f"{size:,}",
                fmt(s["baseline"]),
                f"{ratio(s['baseline'], raw):.2f}",
            ]
        )
    if "anchor" in s:
        rows.append(
            [
                "AgentScope 2.0.11 RedisStorage",
                f"{anchor_bytes or 0:,}",
                fmt(s["anchor"]),
                f"{ratio(s['anchor'], raw):.2f}",
            ]
        )
    body = table(["round trip", "record bytes", "µs per round trip", "x raw"], rows)
    r_raw = ratio(s["ours"], raw)
    verdicts = [
        f"≤ {RAW_TARGET}x raw GET + SET: {r_raw:.2f}x — "
        + verdict(r_raw <= RAW_TARGET, "see the profile notes in the report")
    ]
    if "baseline" in s:
        verdicts.append(
            f"before → after (baseline tree → this tree): x raw {ratio(s['baseline'], raw):.2f} → "
            f"{r_raw:.2f}, {ratio(s['baseline'], s['ours']):.2f}x faster"
        )
    if "anchor" in s:
        speedup = ratio(s["anchor"], s["ours"])
        verdicts.append(
            f"≥ {ANCHOR_TARGET}x faster than AgentScope 2.0.11: {speedup:.2f}x — "
            + verdict(speedup >= ANCHOR_TARGET, "see the profile notes in the report")
        )
    else:
        verdicts.append(f"≥ {ANCHOR_TARGET}x faster than AgentScope 2.0.11: {note or skip_note()}")
    intro = (
        "A 50-message coding conversation (text, tool calls, tool results) in one session, on the "
        "same Redis server; median per round trip over interleaved rounds, ± interquartile spread. "
        "AgentScope reads the record twice (update_session_state re-reads it) and stores its own, "
        "larger message types."
    )
    return section("Session round trip on Redis", intro, body, verdicts)
