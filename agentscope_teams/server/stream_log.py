"""The resume log of the team event stream: event ids of a fixed size, and what each stands for.

An event's id is ``<stream>.<n>``: a random token of the stream (32 hex digits) and the number of the
event in it, at most :data:`MAX_EVENT_ID` characters whatever the size of the team. What the stream
had sent when it sent event ``n`` (:class:`StreamCursor`: the team status, each member's status,
each task's version and blocked reason, the last seq of each inbox) lives in the store, not in the
id: each poll that sends events first writes their marks (one small ``[kind, name, value]`` per
event) to the stream's log, chunks of at most :data:`CHUNK_MARKS` marks under the team's key family
``event-log``, with a TTL. So opening a stream on N tasks writes O(N) once, and its ids are O(1).

Resuming from ``<stream>.<n>`` reads that stream's chunks in order and applies the marks of events
``1..n`` (after the state the stream started from, its *base*): any server process sharing the store
can resume it. A stream starts a new log (a new token, whose base is the current cursor) once its
log holds more than twice the cursor's marks (plus :data:`ROTATE_SLACK`) or is older than the resume
window, so resuming reads O(team size) and every chunk of a log outlives its last event by at least
the window (``resume_seconds``; chunks live ``2 * window + 60`` seconds).

A ``Last-Event-ID`` longer than :data:`MAX_EVENT_ID`, not of the ``<stream>.<n>`` form, or naming an
event past the end of a known log is :class:`~agentscope_teams.errors.EventIdError` (HTTP 400). An id
of the right form whose log this team does not have (another team's, or expired) starts from the
current state, as a new connection does.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import EventIdError
from ..keys import TeamKeys
from ..store.base import BaseStore, get_many

#: The longest ``Last-Event-ID`` accepted (ours are at most 49 characters).
MAX_EVENT_ID = 64
#: Marks per chunk of a log (one store value each).
CHUNK_MARKS = 1000
#: Chunks read per round trip while resuming.
READ_BATCH = 16
#: Marks a log may hold beyond twice its cursor's before the stream starts a new one.
ROTATE_SLACK = 256
_ID = re.compile(r"([0-9a-f]{32})\.([1-9][0-9]{0,15})")

#: One event's effect on the cursor: ``("s", "", status)`` the team, ``("m", name, status)`` a
#: member, ``("t", task_id, [version, reason digest])`` a task, ``("i", member, seq)`` an inbox.
Mark = tuple[str, str, Any]


@dataclass
class StreamCursor:
    """What a stream has sent: enough to send a reconnecting client only what changed since."""

    status: str | None = None
    members: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, tuple[int, str]] = field(default_factory=dict)  # id -> version, digest
    inboxes: dict[str, int] = field(default_factory=dict)

    def apply(self, mark: Mark) -> None:
        kind, name, value = mark
        if kind == "s":
            self.status = str(value)
        elif kind == "m":
            self.members[name] = str(value)
        elif kind == "t":
            self.tasks[name] = (int(value[0]), str(value[1]))
        elif kind == "i":
            self.inboxes[name] = int(value)
        else:
            raise ValueError(f"unknown mark kind {kind!r}")

    def marks(self) -> list[Mark]:
        """The whole cursor as marks (the base of a new log)."""
        out: list[Mark] = [] if self.status is None else [("s", "", self.status)]
        out += [("m", name, status) for name, status in self.members.items()]
        out += [("t", task, list(mark)) for task, mark in self.tasks.items()]
        out += [("i", name, seq) for name, seq in self.inboxes.items()]
        return out

    def size(self) -> int:
        return 1 + len(self.members) + len(self.tasks) + len(self.inboxes)


@dataclass(frozen=True, slots=True)
class EventId:
    """A parsed event id: the stream's token and the event's number in it."""

    text: str
    stream: str
    number: int


def parse_event_id(text: str | None) -> EventId | None:
    """The id to resume after (None: none given); :class:`EventIdError` if it is not ours."""
    if not text:
        return None
    if len(text) > MAX_EVENT_ID:
        raise EventIdError(
            text, f"is {len(text)} characters long; this server's ids have at most {MAX_EVENT_ID}"
        )
    found = _ID.fullmatch(text)
    if found is None:
        raise EventIdError(text, "is not an id this server's event stream sends (<token>.<n>)")
    return EventId(text, found[1], int(found[2]))


class StreamLog:
    """The log one stream writes: :meth:`record` gives each poll's events their ids."""

    def __init__(self, store: BaseStore, keys: TeamKeys, window: float, base: StreamCursor) -> None:
        self.store, self.keys, self.window = store, keys, window
        self.ttl = 2 * window + 60
        self._start(base)

    def _start(self, base: StreamCursor) -> None:
        self.stream = secrets.token_hex(16)
        self._chunk = 0  # the next chunk to write
        self._number = 0  # the last event number given
        self._base: list[Mark] | None = base.marks()  # written with the first chunk
        self._logged = len(self._base)
        self._started: float | None = None  # when the first chunk was written

    def rotate_if_due(self, cursor: StreamCursor) -> None:
        """Before a poll changes ``cursor``: start a new log when this one is too long or old."""
        if self._started is None:
            return
        if (
            self._logged > 2 * cursor.size() + ROTATE_SLACK
            or time.monotonic() - self._started > self.window
        ):
            self._start(cursor)

    async def record(self, marks: list[Mark]) -> list[str]:
        """Write the marks of one poll's events (in order) to the log; their ids, in order."""
        items = [(True, m) for m in self._base or ()] + [(False, m) for m in marks]
        self._base = None
        first = self._number + 1
        for start in range(0, len(items), CHUNK_MARKS):
            part = items[start : start + CHUNK_MARKS]
            events = [m for is_base, m in part if not is_base]
            chunk = {"base": [m for is_base, m in part if is_base], "first": first, "marks": events}
            value = json.dumps(chunk, separators=(",", ":")).encode()
            await self.store.put(self.keys.event_log(self.stream, self._chunk), value, ttl=self.ttl)
            self._chunk += 1
            first += len(events)
        if self._started is None:
            self._started = time.monotonic()
        ids = [f"{self.stream}.{self._number + i}" for i in range(1, len(marks) + 1)]
        self._number += len(marks)
        self._logged += len(marks)
        return ids


async def restore(store: BaseStore, keys: TeamKeys, event: EventId) -> StreamCursor | None:
    """The cursor of ``event``'s stream just after it; None when this team has no such log
    (another team's id, or expired). :class:`EventIdError` if the log ends before ``event``."""
    cursor, seen, chunk = StreamCursor(), 0, 0
    while True:
        batch = [keys.event_log(event.stream, c) for c in range(chunk, chunk + READ_BATCH)]
        for entry in await get_many(store, batch):
            if entry is None and chunk == 0:
                return None
            if entry is None:
                raise EventIdError(event.text, f"names event {event.number}; it sent {seen}")
            try:
                data = json.loads(entry.value)
                for mark in data["base"]:
                    cursor.apply(mark)
                for number, mark in enumerate(data["marks"], start=int(data["first"])):
                    if number > event.number:
                        return cursor
                    cursor.apply(mark)
                    seen = number
            except (ValueError, TypeError, KeyError, IndexError):
                return None  # a damaged log: start from the current state
            if seen == event.number:
                return cursor
            chunk += 1
