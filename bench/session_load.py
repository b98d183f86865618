"""Session load cost against context size, on Redis: the curve issue 14 asks to report.

For conversations of 10, 100 and 1,000 messages (the transcript of :func:`fixtures.conversation`,
about 700 bytes a message), interleaved round by round on the same Redis server:

* **load**: ``get_session`` (one read, the whole record parsed into pydantic models);
* **turn**: what one agent turn does to the record: ``get_session``, two messages appended, then
  ``update_session_state`` (the whole record serialized and written with its version check); the
  previous turn's two messages are dropped first, so every turn starts from ``n`` messages.

The record is one value: a load parses every message and a save serializes every message, so both
grow linearly with the context. The per-message column shows how close to linear.
"""

from __future__ import annotations

import uuid

from agentscope_teams.message import AssistantMsg, UserMsg
from agentscope_teams.sessions import RedisStorage, session_key

from .fixtures import REDIS_URL, conversation, state_from
from .stats import Op, RoundFn, Sample, compare, fmt, section, table, timed, us

SIZES = (10, 100, 1000)
USER, AGENT = "bench", "agent"


async def run(fast: bool = False) -> str:
    ops, rounds = (2, 3) if fast else (10, 15)
    sizes = SIZES[:2] if fast else SIZES
    async with RedisStorage(url=REDIS_URL) as storage:
        sessions = {n: "load-" + uuid.uuid4().hex for n in sizes}
        record_bytes: dict[int, int] = {}
        try:
            named: dict[str, RoundFn] = {}
            for n, sid in sessions.items():
                await storage.upsert_session(
                    user_id=USER, agent_id=AGENT, session_id=sid,
                    state=state_from(conversation(n), sid),
                )  # fmt: skip
                entry = await storage.store.get(session_key(None, USER, AGENT, sid))
                assert entry is not None
                record_bytes[n] = len(entry.value)
                named[f"load {n}"] = timed(_loader(storage, sid))
                named[f"turn {n}"] = timed(_turn(storage, sid, n))
            samples = await compare(named, ops=ops, rounds=rounds)
        finally:
            for sid in sessions.values():
                await storage.delete_session(USER, AGENT, sid)
    return _report(samples, sizes, record_bytes)


def _loader(storage: RedisStorage, sid: str) -> Op:
    async def load(_: int) -> None:
        if await storage.get_session(USER, AGENT, sid) is None:
            raise LookupError(f"bench session {sid} vanished")

    return load


def _turn(storage: RedisStorage, sid: str, n: int) -> Op:
    async def turn(i: int) -> None:
        record = await storage.get_session(USER, AGENT, sid)
        if record is None:
            raise LookupError(f"bench session {sid} vanished")
        state = record.state
        del state.context[n:]  # the previous turn's messages: every turn starts from n
        state.context.append(UserMsg(f"Turn {i}: and the second parser?"))
        state.context.append(AssistantMsg("It rejects the same input for the same reason. " * 4))
        await storage.update_session_state(
            user_id=USER, agent_id=AGENT, session_id=sid, state=state
        )

    return turn


def _report(s: dict[str, Sample], sizes: tuple[int, ...], record_bytes: dict[int, int]) -> str:
    first = sizes[0]
    rows = []
    for n in sizes:
        load, turn = s[f"load {n}"], s[f"turn {n}"]
        rows.append(
            [
                f"{n:,}",
                f"{record_bytes[n]:,}",
                fmt(load),
                f"{load.median / s[f'load {first}'].median:.1f}",
                us(load.median / n),
                fmt(turn),
                f"{turn.median / s[f'turn {first}'].median:.1f}",
                us(turn.median / n),
            ]
        )
    headers = [
        "messages",
        "record bytes",
        "load µs",
        f"x {first}-message load",
        "load µs per message",
        "turn µs",
        f"x {first}-message turn",
        "turn µs per message",
    ]
    last = sizes[-1]
    growth = s[f"load {last}"].median / s[f"load {first}"].median
    lines = [
        f"load, {last:,} vs {first:,} messages: {growth:.1f}x for {last // first}x the messages "
        "(reported; the record is one value, parsed whole on every load)"
    ]
    intro = (
        "`get_session` (load) and one agent turn (load, two messages appended, "
        "`update_session_state`) on Redis, per context size; median over interleaved rounds ± "
        "interquartile spread, wall time."
    )
    return section(
        "Session load cost against context size (Redis)", intro, table(headers, rows), lines
    )
