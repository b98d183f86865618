"""Blocking entry points for scripts and notebooks: one event loop on a background thread.

Connection pools (model clients, Redis, SQL engines) belong to the event loop that opened them, so
a fresh loop per blocking call would strand them. :class:`LoopThread` keeps one loop on a daemon
thread (it never keeps the interpreter alive) and runs every blocking call of its owner there.
Inside a running event loop a blocking call would freeze that loop: :func:`refuse_inside_loop`
raises :class:`SyncCallInsideLoopError` instead, naming the ``await`` form to use.

A script that never closes its owner still ends cleanly: at interpreter exit (``atexit``) the
loop runs the owner's ``closer`` (``HarnessAgent.aclose``: team members, subagent runs, the
store), then cancels what is left, as ``asyncio.run`` does, and closes; nothing is left pending
for the interpreter to report ("Task was destroyed but it is pending!").
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..errors import SyncCallInsideLoopError

T = TypeVar("T")
log = logging.getLogger(__name__)
#: How long the owner's ``closer`` may take at interpreter exit before what is left is cancelled.
AT_EXIT_SECONDS = 30.0


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

    def __init__(self, name: str, closer: Callable[[], Awaitable[object]] | None = None) -> None:
        self._name = name
        self._closer = closer
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
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
        """Stop the loop (what still runs on it is cancelled) and wait for its thread; a later
        :meth:`run` starts new ones."""
        with self._lock:
            loop, self._loop = self._loop, None
            thread, self._thread = self._thread, None
        atexit.unregister(self._at_exit)
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(AT_EXIT_SECONDS)

    def _at_exit(self) -> None:
        """The interpreter exits with the loop still running: close the owner, then stop."""
        try:
            if self._closer is not None and self._loop is not None:
                closer = self._closer
                future = asyncio.run_coroutine_threadsafe(_awaited(closer), self._loop)
                future.result(AT_EXIT_SECONDS)
        except Exception as exc:  # exiting anyway: say why the close was cut short
            log.warning("closing %s at exit failed: %r", self._name, exc)
        finally:
            self.stop()

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = concurrent.futures.Future[None]()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set_result, None)
                    try:
                        loop.run_forever()
                    finally:
                        _shut_down(loop)

                thread = threading.Thread(target=serve, name=self._name, daemon=True)
                thread.start()
                ready.result()
                self._loop, self._thread = loop, thread
                atexit.register(self._at_exit)
            return self._loop


def _shut_down(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel the tasks still on ``loop`` and let them end, close its async generators, close it
    (what ``asyncio.run`` does when its main coroutine returns)."""
    try:
        left = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


async def _awaited(make: Callable[[], Awaitable[T]]) -> T:
    return await make()
