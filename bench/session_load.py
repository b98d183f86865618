"""Session load cost against context size, on Redis: the curve issue 14 asks to report.

For conversations of 10, 100 and 1,000 messages (the transcript of :func:`fixtures.conversation`,
about 700 bytes a message), interleaved round by round on the same Redis server:

* **load**: ``get_session`` (one read, the whole record parsed into pydantic models);
* **turn**: what one agent turn does to the record: ``get_session``, two messages appended, then
  ``update_session_state`` (the whole record serialized and written with its version check); the
  previous turn's two messages are dropped first, so every turn starts from ``n`` messages.

On Redis the record is segmented from its first rewrite on (``agentscope_teams.sessions.segments``):
a load parses only segments the process has not cached and a save sends only the segments that
changed, so neither should grow with the context; the per-message column shows it, and "bytes sent
per turn" is what one turn's save sends (head and segments). With ``AGENTSCOPE_TEAMS_BASELINE_PATH``
naming another agentscope-teams tree (e.g. a checkout of main), the same operations of that tree run
in worker processes interleaved with these rounds (``baseline_session.py``): the before/after rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack
from typing import Any

from agentscope_teams.message import AssistantMsg, UserMsg
from agentscope_teams.sessions import RedisStorage, session_key

from .anchor import Anchor, baseline_path
from .fixtures import REDIS_URL, conversation, state_from
from .stats import Op, RoundFn, Sample, compare, fmt, section, table, timed, us

SIZES = (10, 100, 1000)
TURN_TARGET = 2.0
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
            async with AsyncExitStack() as stack:
                await _baselines(stack, named, sizes)
                samples = await compare(named, ops=ops, rounds=rounds)
            sent = {n: await _bytes_sent(storage, sid, n) for n, sid in sessions.items()}
        finally:
            for sid in sessions.values():
                await storage.delete_session(USER, AGENT, sid)
    return _report(samples, sizes, record_bytes, sent)


async def _baselines(
    stack: AsyncExitStack, named: dict[str, RoundFn], sizes: Sequence[int]
) -> None:
    """Worker processes running the baseline tree's load and turn, when one is configured."""
    path = baseline_path()
    if path is None:
        return
    for n in sizes:
        for mode in ("load", "turn"):
            worker = Anchor("baseline_session.py", REDIS_URL, mode, str(n), baseline=path)
            named[f"base {mode} {n}"] = (await stack.enter_async_context(worker)).round


class _Counting:
    """The store's ``put_fields``, counting the bytes a save sends."""

    def __init__(self, store: Any) -> None:
        self.store, self.sent = store, 0

    async def get_fields(self, key: Any, fields: Any) -> Any:
        return await self.store.get_fields(key, fields)

    async def put_fields(self, key: Any, value: bytes, **kw: Any) -> int:
        self.sent += len(value) + sum(len(f) + len(d) for f, d in kw["fields"])
        return int(await self.store.put_fields(key, value, **kw))


async def _bytes_sent(storage: RedisStorage, sid: str, n: int) -> int:
    """What one more turn's save sends to the store (head and segments)."""
    counting = _Counting(storage.store)
    storage._fields = counting  # the bench looks inside: the storage's field-record store
    try:
        await _turn(storage, sid, n)(0)
    finally:
        storage._fields = counting.store
    return counting.sent


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


def _rows(
    s: dict[str, Sample], sizes: Sequence[int], prefix: str, extra: dict[int, str]
) -> list[list[str]]:
    first = sizes[0]
    rows = []
    for n in sizes:
        load, turn = s[f"{prefix}load {n}"], s[f"{prefix}turn {n}"]
        rows.append(
            [
                ("before (baseline tree) " if prefix else "") + f"{n:,}",
                extra.get(n, "—"),
                fmt(load),
                f"{load.median / s[f'{prefix}load {first}'].median:.1f}",
                us(load.median / n),
                fmt(turn),
                f"{turn.median / s[f'{prefix}turn {first}'].median:.1f}",
                us(turn.median / n),
            ]
        )
    return rows


def _report(
    s: dict[str, Sample],
    sizes: tuple[int, ...],
    record_bytes: dict[int, int],
    sent: dict[int, int],
) -> str:
    first = sizes[0]
    extra = {n: f"{record_bytes[n]:,} / {sent[n]:,}" for n in sizes}
    rows = _rows(s, sizes, "", extra)
    if f"base load {first}" in s:
        rows += _rows(s, sizes, "base ", {n: f"{record_bytes[n]:,}" for n in sizes})
    headers = [
        "messages",
        "record bytes / bytes sent per turn",
        "load µs",
        f"x {first}-message load",
        "load µs per message",
        "turn µs",
        f"x {first}-message turn",
        "turn µs per message",
    ]
    last = sizes[-1]
    growth = s[f"load {last}"].median / s[f"load {first}"].median
    turns = s[f"turn {last}"].median / s[f"turn {first}"].median
    lines = [
        f"load, {last:,} vs {first:,} messages: {growth:.1f}x for {last // first}x the messages",
        f"turn, {last:,} vs {first:,} messages: {turns:.1f}x — target ≤ {TURN_TARGET}x: "
        + ("met" if turns <= TURN_TARGET else "missed"),
    ]
    if f"base turn {last}" in s:
        before = s[f"base turn {last}"].median / s[f"base turn {first}"].median
        lines.append(f"before (baseline tree), turn {last:,} vs {first:,}: {before:.1f}x")
    intro = (
        "`get_session` (load) and one agent turn (load, two messages appended, "
        "`update_session_state`) on Redis, per context size; median over interleaved rounds ± "
        "interquartile spread, wall time."
    )
    return section(
        "Session load cost against context size (Redis)", intro, table(headers, rows), lines
    )
