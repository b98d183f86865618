"""Reading a server-sent-events stream in tests."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class Event:
    name: str
    data: Any


class SseReader:
    """Frames of one open stream; comments are counted, not returned."""

    def __init__(self, response: httpx.Response) -> None:
        self.lines: Iterator[str] = response.iter_lines()
        self.comments = 0
        self.seen: list[Event] = []

    def next(self) -> Event | None:
        """The next event (a comment is an event named ":"), or None when the stream ended."""
        name, data = "message", list[str]()
        for line in self.lines:
            if line == "":
                if data:
                    event = Event(name, json.loads("\n".join(data)))
                    self.seen.append(event)
                    return event
                continue
            if line.startswith(":"):
                self.comments += 1
                return Event(":", line[1:].strip())
            elif line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        return None

    def until(self, found: Callable[[Event], bool], timeout: float = 10.0) -> Event:
        """Read until an event matches (heartbeats keep the loop turning)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            event = self.next()
            if event is None:
                raise AssertionError(f"stream ended; saw {[e.name for e in self.seen]}")
            if event.name != ":" and found(event):
                return event
        raise AssertionError(f"no matching event within {timeout}s; saw {self.seen}")
