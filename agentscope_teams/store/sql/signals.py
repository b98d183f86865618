"""Store signals on PostgreSQL: ``pg_notify`` to wake, one shared ``LISTEN`` connection to wait.

``signal`` is one ``SELECT pg_notify(channel, '')`` through the store's pool (autocommit: one round
trip; PostgreSQL delivers it to every session listening on the channel, in any process).
:class:`Listener` holds one dedicated asyncpg connection per store, opened by the first ``wait``;
each channel is ``LISTEN``-ed once a waiter asked for it and stays so (a process waits on the teams
it serves: a small, stable set). asyncpg calls back on each notification; the callback sets the
:class:`anyio.Event` of every task waiting on that channel.

Channel names are identifiers derived from the key: :func:`channel_name` hashes the table prefix
and the encoded key (``ast_`` + 40 hex digits, under PostgreSQL's 63-byte limit, never quoted user
text), so stores sharing a database with other table prefixes do not wake each other.

A lost connection (the server restarted, the backend was terminated) is logged; every waiter is
woken (a spurious wake-up costs one look at the board), and the next ``wait`` connects and listens
again. A connection that died silently (no FIN from a vanished host) is found by a ``SELECT 1`` that
a ``wait`` sends when the last one is over ``HEALTH_EVERY`` seconds old; if it fails or does not
answer within ``HEALTH_TIMEOUT``, the connection is dropped and the next ``wait`` opens another. A notification sent while the connection was down is lost: the callers' poll covers it. A
``wait`` that cannot connect sleeps its timeout and returns False.

:class:`Wakes` sends the wake-ups that follow commits (the board's finish), coalesced per channel
within one process: a notification wakes every waiter of the channel, and a waiter woken by it sees
every commit made before the ``NOTIFY`` statement started. So a writer that committed while another
writer's notification is queued but not started needs none of its own; one that committed while a
notification is on the wire queues the next one, sent on its own connection once that one is
answered (at most one in flight and one queued per channel). Each writer waits at most one
notification's round trip and sends at most one.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import anyio

from .._signal_waiters import Waiters
from ..base import Key, encode_key

log = logging.getLogger(__name__)

#: Seconds between checks that the listening connection still answers.
HEALTH_EVERY = 30.0
HEALTH_TIMEOUT = 5.0


@lru_cache(maxsize=1024)
def channel_name(table_prefix: str, key: Key) -> str:
    """The PostgreSQL channel of ``key`` for a store with ``table_prefix`` (a safe identifier;
    cached: a process signals the few channels of the teams it serves, on every finish)."""
    digest = hashlib.sha256(f"{table_prefix}\0{encode_key(key)}".encode()).hexdigest()
    return "ast_" + digest[:40]


class Listener(Waiters):
    """The shared ``LISTEN`` connection of one store; see the module docs.

    ``connect_args`` are asyncpg's ``connect`` keyword arguments (host, port, user, ...).
    """

    backend = "PostgreSQL"

    def __init__(self, connect_args: Mapping[str, Any]) -> None:
        super().__init__()
        self._args = dict(connect_args)
        self._conn: Any = None
        self._listening: set[str] = set()
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._checked = 0.0  # when the connection last answered (monotonic)
        self.connects = 0  # connections opened (tests: a lost one is replaced)

    async def _ensure(self, names: Sequence[str]) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (tests): the old connection is unusable
            self._conn, self._listening = None, set()
            self._lock, self._loop = asyncio.Lock(), loop
        assert self._lock is not None
        async with self._lock:
            if self._conn is None or self._conn.is_closed():
                await self._connect()
            elif time.monotonic() - self._checked >= HEALTH_EVERY:
                await self._ping(self._conn)
                self._checked = time.monotonic()
            for name in sorted(set(names) - self._listening):
                await self._conn.add_listener(name, self._notified)
                self._listening.add(name)

    async def _connect(self) -> None:
        import asyncpg  # the postgres extra; SqlStore only builds a Listener on PostgreSQL

        conn = await asyncpg.connect(**self._args)
        self.connects += 1
        conn.add_termination_listener(self._lost)
        self._conn, self._listening, self._checked = conn, set(), time.monotonic()

    async def _ping(self, conn: Any) -> None:
        await conn.execute("SELECT 1", timeout=HEALTH_TIMEOUT)

    def _notified(self, conn: Any, pid: int, channel: str, payload: object) -> None:
        self.wake(channel)

    def _lost(self, conn: Any) -> None:
        if self._conn is not conn:
            return
        log.warning("PostgreSQL signal connection lost, reconnecting on the next wait")
        self._conn, self._listening = None, set()
        self.wake_all()

    async def _reset(self) -> None:
        """Drop the connection at once (it failed: a graceful close could hang on it too)."""
        conn, self._conn, self._listening = self._conn, None, set()
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.terminate()

    async def aclose(self) -> None:
        """Close the listening connection (on this event loop only)."""
        with contextlib.suppress(RuntimeError):
            if self._loop is not asyncio.get_running_loop():
                return
        conn, self._conn, self._listening = self._conn, None, set()
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close(timeout=HEALTH_TIMEOUT)

    @property
    def backend_pid(self) -> int | None:
        """The server process id of the listening connection (None when not connected)."""
        conn = self._conn
        return None if conn is None or conn.is_closed() else int(conn.get_server_pid())


#: Wakes the waiters of a channel (after a commit: see :class:`Wakes`).
NOTIFY = "SELECT pg_notify($1, '')"


class _Channel:
    """One channel's wake-ups in flight (answered when ``done`` is set) and queued."""

    __slots__ = ("done", "loop", "queued")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queued = False
        self.done: asyncio.Event | None = None


class Wakes:
    """The wake-ups that follow commits, coalesced per channel (see the module docs).

    ``sent`` counts the ``NOTIFY`` statements this instance sent (tests, benchmarks).
    """

    def __init__(self) -> None:
        self._channels: dict[str, _Channel] = {}
        self.sent = 0

    def _state(self, channel: str) -> _Channel:
        loop = asyncio.get_running_loop()
        state = self._channels.get(channel)
        if state is None or state.loop is not loop:  # a new event loop (tests): start afresh
            state = self._channels[channel] = _Channel(loop)
        return state

    async def after_commit(self, conn: Any, channel: str) -> bool:
        """Wake ``channel``'s waiters after the caller's commit on the asyncpg connection
        ``conn``: queue a ``NOTIFY`` unless one is queued already, sent once the one in flight
        (if any) is answered. True when this call sent it. A failure is logged (the write is
        done, and waiters poll); the wait and the send are shielded from cancellation, as a
        pool's check-in is, and bounded by twice ``HEALTH_TIMEOUT``."""
        state = self._state(channel)
        if state.queued:  # starts after this commit: it covers it
            return False
        state.queued = True
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2 * HEALTH_TIMEOUT):
                while state.done is not None:
                    await state.done.wait()
                state.queued = False
                state.done = done = asyncio.Event()
                try:
                    await self._notify(conn, channel)
                finally:
                    state.done = None
                    done.set()
        finally:
            state.queued = False
        return True

    async def _notify(self, conn: Any, channel: str) -> None:
        try:
            await conn.execute(NOTIFY, channel, timeout=HEALTH_TIMEOUT)
            self.sent += 1
        except Exception as exc:
            log.warning("could not wake the waiters of channel %s: %s", channel, exc)
