"""Shared pieces of the schema attack tests (issue 22, findings 1 and 2): a loopback HTTP server
that records every request, and a counter of event-loop ticks taken while a call runs."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio
import anyio.lowlevel

T = TypeVar("T")

#: The audit's catastrophic pattern, and one the ``regex`` engine cannot shortcut either.
NESTED = "^(a+)+$"
ALTERNATING = "^(a|aa)+$"


@contextmanager
def recording_server() -> Iterator[tuple[str, list[str]]]:
    """(base URL, the paths requested so far) of a server answering every GET with a schema."""
    requested: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requested.append(self.path)
            body = b'{"type": "string"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requested
    finally:
        server.shutdown()
        server.server_close()


async def ticks_during(call: Callable[[], Awaitable[T]]) -> tuple[T | BaseException, int]:
    """(what ``call`` returned or raised, how many times a concurrent task got the event loop
    while it ran). A task sleeping 5 ms a turn: a loop blocked by ``call`` gives it no turn."""
    ticks = 0
    running = True

    async def ticker() -> None:
        nonlocal ticks
        while running:
            await anyio.sleep(0.005)
            ticks += 1

    outcome: Any = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await anyio.lowlevel.checkpoint()  # the ticker is waiting before the call starts
        start = ticks
        try:
            outcome = await call()
        except Exception as exc:
            outcome = exc
        counted = ticks - start
        running = False
    return outcome, counted
