"""Store signals on Redis: ``PUBLISH`` to wake, one shared pub/sub connection per store to wait.

:class:`Subscriber` holds a single :class:`redis.asyncio.client.PubSub` per store, started lazily by
the first ``wait``. Its reader task dispatches each message to the :class:`anyio.Event` of every
task waiting on that channel. Channels stay subscribed once a waiter asked for them (a process
waits on the teams it serves; the set is small and stable), so re-waiting costs no round trip.

A failure (the server went away, the connection dropped) is logged; the reader stops, every waiter
is woken (a spurious wake-up costs one look at the board), and the next ``wait`` connects again. A
``wait`` that cannot subscribe sleeps its timeout and returns False: the caller's poll takes over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import anyio

from ._signal_waiters import Waiters

log = logging.getLogger(__name__)


class Subscriber(Waiters):
    """The shared subscriber of one Redis client; see the module docs."""

    backend = "Redis"

    def __init__(self, client: Any) -> None:
        super().__init__()
        self._client = client
        self._pubsub: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._stop: anyio.CancelScope | None = None  # the reader's: cancelled to stop it
        self._subscribed: set[str] = set()
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _ensure(self, names: Sequence[str]) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (tests): the old connection is unusable
            self._pubsub, self._reader, self._subscribed = None, None, set()
            self._lock, self._loop = asyncio.Lock(), loop
        assert self._lock is not None
        async with self._lock:
            if self._pubsub is None:
                self._pubsub = self._client.pubsub(ignore_subscribe_messages=True)
                self._subscribed = set()
            missing = sorted(set(names) - self._subscribed)
            if missing:
                await self._pubsub.subscribe(*missing)
                self._subscribed.update(missing)
            if self._reader is None or self._reader.done():
                self._stop = anyio.CancelScope()
                self._reader = loop.create_task(
                    self._read(self._pubsub, self._stop), name="redis signals"
                )

    async def _read(self, pubsub: Any, stop: anyio.CancelScope) -> None:
        with stop:
            try:
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
                    if message is None or message.get("type") != "message":
                        continue
                    channel = message["channel"]
                    name = channel.decode() if isinstance(channel, bytes) else str(channel)
                    self.wake(name)
            except Exception as exc:
                log.warning(
                    "Redis signal subscriber failed, reconnecting on the next wait: %s", exc
                )
                if self._pubsub is pubsub:
                    self._pubsub, self._subscribed = None, set()
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                self.wake_all()

    async def _reset(self) -> None:
        """Stop the reader and close its connection. The reader is stopped through its cancel
        scope, delivered again at each of its awaits until it ended (one ``Task.cancel()`` can be
        swallowed by the client: ``asyncio.wait_for`` does on Python 3.11); this call's own
        cancellation is not suppressed."""
        pubsub, self._pubsub, self._subscribed = self._pubsub, None, set()
        reader, self._reader = self._reader, None
        if reader is not None and not reader.done() and self._stop is not None:
            self._stop.cancel()
            await asyncio.wait({reader})
        if pubsub is not None:
            with contextlib.suppress(Exception):
                await pubsub.aclose()

    async def aclose(self) -> None:
        """Stop the reader and close the pub/sub connection (on this event loop only)."""
        with contextlib.suppress(RuntimeError):
            if self._loop is not asyncio.get_running_loop():
                return
        await self._reset()
