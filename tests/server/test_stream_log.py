"""The resume log of the event stream (:mod:`agentscope_teams.server.stream_log`): every id it
gives restores exactly the cursor the stream had after that event, across the logs a long stream
rotates through, and reading one costs a bounded number of store calls."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import pytest

from agentscope_teams.errors import EventIdError
from agentscope_teams.keys import TeamKeys
from agentscope_teams.server import stream_log
from agentscope_teams.server.stream_log import (
    MAX_EVENT_ID,
    Mark,
    StreamCursor,
    StreamLog,
    parse_event_id,
    restore,
)
from agentscope_teams.store import InMemoryStore
from agentscope_teams.store.base import Entry, Key

KEYS = TeamKeys(("o:o", "u:alice"), "team-1")


class ReadCounting(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def get_many(self, keys: Sequence[Key]) -> list[Entry | None]:
        self.reads += 1
        return [await self.get(k) for k in keys]


def _batch(round_: int) -> list[Mark]:
    """A poll's events: a task that keeps changing, a new task now and then, inbox messages."""
    marks: list[Mark] = [("t", "t-1", [round_ + 1, "0000"])]
    if round_ % 3 == 0:
        marks.append(("t", f"t-{round_ + 2}", [1, "abcd"]))
    marks += [("i", "lead", 2 * round_ + 1), ("i", "lead", 2 * round_ + 2)]
    return marks


async def test_every_id_restores_its_cursor_across_rotations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stream_log, "ROTATE_SLACK", 4)  # rotate often
    monkeypatch.setattr(stream_log, "CHUNK_MARKS", 3)  # several chunks per poll
    store = ReadCounting()
    cursor = StreamCursor()
    log = StreamLog(store, KEYS, 600, cursor)
    expected: dict[str, StreamCursor] = {}
    streams = set()
    for round_ in range(40):
        log.rotate_if_due(cursor)
        marks = _batch(round_)
        snapshots = []
        for mark in marks:
            cursor.apply(mark)
            snapshots.append(copy.deepcopy(cursor))
        ids = await log.record(marks)
        expected.update(zip(ids, snapshots, strict=True))
        streams.add(log.stream)
    assert len(streams) > 3  # the log rotated
    assert max(map(len, expected)) <= 49 < MAX_EVENT_ID
    for event_id, want in expected.items():
        parsed = parse_event_id(event_id)
        assert parsed is not None
        store.reads = 0
        assert await restore(store, KEYS, parsed) == want, event_id
        # a log holds at most about twice the cursor: a bounded number of batched reads
        assert store.reads <= 2


async def test_a_log_of_another_team_or_past_its_end() -> None:
    store = InMemoryStore()
    log = StreamLog(store, KEYS, 600, StreamCursor())
    ids = await log.record([("s", "", "active"), ("m", "w1", "idle")])
    parsed = parse_event_id(ids[-1])
    assert parsed is not None
    other = TeamKeys(("o:o", "u:alice"), "team-2")
    assert await restore(store, other, parsed) is None  # start from the current state
    past = parse_event_id(f"{log.stream}.3")
    assert past is not None
    with pytest.raises(EventIdError, match="names event 3; it sent 2"):
        await restore(store, KEYS, past)


async def test_the_log_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[dict[str, Any]] = []

    class Recording(InMemoryStore):
        async def put(self, key: Key, value: bytes, **kw: Any) -> int:
            written.append(kw)
            return await super().put(key, value, **kw)

    log = StreamLog(Recording(), KEYS, 30, StreamCursor())
    await log.record([("s", "", "active")])
    assert written == [{"ttl": 120}]  # twice the resume window, and a minute


@pytest.mark.parametrize(
    "text",
    ["x" * 63_000, "0" * 65, "garbage", "0" * 32 + ".0", "0" * 31 + ".1", "A" * 32 + ".1"],
)
def test_a_forged_id_is_refused_before_any_work(text: str) -> None:
    with pytest.raises(EventIdError) as caught:
        parse_event_id(text)
    assert len(str(caught.value)) < 300  # the message quotes at most 80 characters of it
