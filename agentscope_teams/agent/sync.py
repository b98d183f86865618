"""Blocking entry points for scripts and notebooks: one event loop on a background thread.

Connection pools (model clients, Redis, SQL engines) belong to the event loop that opened them, so
a fresh loop per blocking call would strand them. :class:`LoopThread` keeps one loop on a daemon
thread (it never keeps the interpreter alive) and runs every blocking call of its owner there.
Inside a running event loop a blocking call would freeze that loop: :func:`refuse_inside_loop`
raises :class:`SyncCallInsideLoopError` instead, naming the ``await`` form to use.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..errors import SyncCallInsideLoopError

T = TypeVar("T")


def refuse_inside_loop(method: str, instead: str) -> None:
    """Raise :class:`SyncCallInsideLoopError` if an event loop runs in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise SyncCallInsideLoopError(
        f"{method} blocks, and an event loop is running in this thread (a notebook cell, an async "
        f"function): use {instead} there instead"
    )


class LoopThread:
    """An asyncio loop on a daemon thread, started on first use; :meth:`run` blocks on it."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._loop is not None

    def run(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run ``make()`` on the loop and wait for its result; Ctrl-C cancels it."""
        future = asyncio.run_coroutine_threadsafe(_awaited(make), self._start())
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def stop(self) -> None:
        """Stop the loop and its thread (a later :meth:`run` starts new ones)."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = concurrent.futures.Future[None]()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set_result, None)
                    loop.run_forever()
                    loop.close()

                threading.Thread(target=serve, name=self._name, daemon=True).start()
                ready.result()
                self._loop = loop
            return self._loop


async def _awaited(make: Callable[[], Awaitable[T]]) -> T:
    return await make()
