"""Bounded output capture: the head and the tail of what a command wrote, and how much was left out."""

from __future__ import annotations

import threading


class OutputBuffer:
    """Keeps at most ``limit`` bytes of a stream: its first half and its last half.

    Written to by a reader thread and taken by the event loop, so every access holds a lock.
    :meth:`take` returns what was kept since the previous take and starts over (a background
    command's "new output since the last read").
    """

    def __init__(self, limit: int) -> None:
        self.head_limit = (limit + 1) // 2
        self.tail_limit = limit // 2
        self._lock = threading.Lock()
        self._head = bytearray()
        self._tail = bytearray()
        self._omitted = 0
        self.total = 0

    def add(self, data: bytes) -> None:
        with self._lock:
            self.total += len(data)
            room = self.head_limit - len(self._head)
            if room > 0:
                self._head += data[:room]
                data = data[room:]
            if not data:
                return
            self._tail += data
            extra = len(self._tail) - self.tail_limit
            if extra > 0:
                del self._tail[:extra]
                self._omitted += extra

    def take(self) -> tuple[str, int]:
        """(the kept text with a note where bytes were cut, the omitted byte count)."""
        with self._lock:
            head, tail, omitted = bytes(self._head), bytes(self._tail), self._omitted
            self._head, self._tail, self._omitted = bytearray(), bytearray(), 0
        text = head.decode("utf-8", errors="replace")
        if omitted:
            text += f"\n[... {omitted:,} bytes of output omitted here ...]\n"
        return text + tail.decode("utf-8", errors="replace"), omitted
