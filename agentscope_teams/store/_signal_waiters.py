"""What every store's signal listener shares: the tasks waiting per channel, and how they wake.

A backend's listener subclasses :class:`Waiters` (:class:`LocalWaiters`: one that listens to
nothing, for a store whose signals stay in its process) and supplies :meth:`Waiters._ensure` (connect
and subscribe to the channels, once) and :meth:`Waiters._reset` (drop a connection that failed);
its reader calls :meth:`Waiters.wake` per message and :meth:`Waiters.wake_all` when the
connection is lost (a spurious wake-up costs a waiter one look; a missed one, a poll).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import anyio

log = logging.getLogger(__name__)


class Waiters:
    """The waiting side of a listener: ``wait`` on channel names until woken or timed out."""

    #: Names the backend in the log line of a listener that cannot connect.
    backend = "store"

    def __init__(self) -> None:
        self._waiters: dict[str, set[anyio.Event]] = {}

    async def wait(self, names: Sequence[str], timeout: float) -> bool:  # noqa: ASYNC109
        """True when a signal on one of ``names`` woke this call within ``timeout`` seconds. A
        listener that cannot connect makes the call sleep its timeout and return False: the
        caller's poll takes over."""
        event = anyio.Event()
        for name in names:
            self._waiters.setdefault(name, set()).add(event)
        try:
            try:
                await self._ensure(names)
            except Exception as exc:
                log.warning("%s signals unavailable, polling instead: %s", self.backend, exc)
                await self._reset()
                await anyio.sleep(timeout)
                return False
            with anyio.move_on_after(timeout):
                await event.wait()
            return event.is_set()
        finally:
            for name in names:
                waiting = self._waiters.get(name)
                if waiting is not None:
                    waiting.discard(event)
                    if not waiting:
                        del self._waiters[name]

    def wake(self, name: str) -> None:
        """Wake every task waiting on channel ``name``."""
        for event in list(self._waiters.get(name, ())):
            event.set()

    def wake_all(self) -> None:
        """Wake every waiting task (the connection was lost: they look, then wait again)."""
        for waiting in list(self._waiters.values()):
            for event in waiting:
                event.set()

    async def _ensure(self, names: Sequence[str]) -> None:
        raise NotImplementedError

    async def _reset(self) -> None:
        raise NotImplementedError


class LocalWaiters(Waiters):
    """Waiters woken from this process only (the memory store's signals): nothing to connect."""

    backend = "memory"

    async def _ensure(self, names: Sequence[str]) -> None:
        return None

    async def _reset(self) -> None:
        return None
