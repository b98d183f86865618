"""``McpPool``: the live MCP connections of one agent, keyed by (server, org, user).

Agents are stateless and serve many users at once, so connections cannot live in a call or a
session. They live in a pool owned by the agent (shared with the subagents and team members it
builds), keyed by the server's configuration (its fingerprint: equal configurations share) and the
caller's owner, so **a server is never shared across users**: each (org, user) gets its own
process (stdio) or HTTP session. A caller without a ``user_id`` is keyed by its session, so two
anonymous callers never share either. The cost is one server per active user and server; it is
bounded by ``idle_timeout`` (a connection with no call for that long closes itself) and by
``max_live``: never more than that many servers of this pool run (or start, or are still
stopping) at once, however many callers arrive together. A caller that needs a new server when
the pool is full closes the least recently used idle one (no call in flight or about to start)
and waits for it to stop; when none is idle it waits, up to ``wait_timeout`` seconds, for a call
to finish, then gets a tool error saying every connection is busy.

Servers start lazily. A server's tool listing is remembered per configuration once any user's
connection listed it, so another user's first call shows the tools without starting anything: that
user's own server starts only when the model calls one of them. A crashed server is dropped and
started again on the next call. :meth:`McpPool.aclose` stops every server.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from ..context import RuntimeContext
from ..errors import ToolError
from .config import HttpServer, StdioServer
from .connection import Connection, ServerGone

log = logging.getLogger(__name__)

Owner = tuple[str, ...]


@dataclass(frozen=True)
class NamedServer:
    """A configured server and the name its tools are published under."""

    name: str
    config: StdioServer | HttpServer

    @property
    def fingerprint(self) -> str:
        return self.config.fingerprint()


def owner_of(ctx: RuntimeContext) -> Owner:
    """Who a connection belongs to: (org, user), or (org, user, session) without a user."""
    return ctx.owner_scope() if ctx.user_id is not None else ctx.scope()


class McpPool:
    """Lazily started, per-user MCP connections (see the module docstring)."""

    def __init__(
        self,
        *,
        max_live: int = 16,
        idle_timeout: float = 300.0,
        call_timeout: float = 120.0,
        startup_timeout: float = 30.0,
        wait_timeout: float = 60.0,
    ) -> None:
        timeouts = (idle_timeout, call_timeout, startup_timeout, wait_timeout)
        if max_live < 1 or not all(t > 0 for t in timeouts):
            raise ValueError("max_live must be >= 1 and the timeouts > 0 seconds")
        self.max_live, self.idle_timeout = max_live, idle_timeout
        self.call_timeout, self.startup_timeout = call_timeout, startup_timeout
        self.wait_timeout = wait_timeout
        self._starting = 0  # reserved room: servers starting
        self._closing = 0  # servers being stopped (they still run)
        self._changed: anyio.Event | None = None  # set when room may have been freed
        self._changed_loop: asyncio.AbstractEventLoop | None = None
        self.peak = 0  # the most servers running at once (a count tests read)
        self._conns: dict[tuple[str, Owner], Connection] = {}
        self._locks: weakref.WeakValueDictionary[tuple[str, Owner], anyio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._listings: dict[str, list[Any]] = {}
        self.starts = 0  # servers started so far (a count tests and benchmarks read)

    def listing(self, server: NamedServer) -> list[Any] | None:
        """The server's tools as last listed by any user's connection, or None if never."""
        return self._listings.get(server.fingerprint)

    def live(self) -> list[Connection]:
        """The connections still running."""
        return [c for c in self._conns.values() if not c.dead]

    async def ensure_listing(self, server: NamedServer, ctx: RuntimeContext) -> list[Any]:
        """The server's tools, starting the caller's connection if nobody listed them yet (a
        caller waiting for room stops waiting once another caller's server listed them)."""
        while (found := self.listing(server)) is None:
            await self._connect(server, ctx, listing=True)
        return found

    async def connection(
        self, server: NamedServer, ctx: RuntimeContext, *, pin: bool = False
    ) -> Connection:
        """The caller's running connection to ``server``, started if needed (ToolError if it
        cannot start). With ``pin`` it is kept from being closed for room until :meth:`unpin`."""
        conn = await self._connect(server, ctx, pin=pin)
        assert conn is not None
        return conn

    async def _connect(
        self, server: NamedServer, ctx: RuntimeContext, *, pin: bool = False, listing: bool = False
    ) -> Connection | None:
        """:meth:`connection`; with ``listing``, None once the server's tools are listed."""
        slot = (server.fingerprint, owner_of(ctx))
        lock = self._locks.get(slot)
        if lock is None:
            lock = self._locks[slot] = anyio.Lock()
        async with lock:
            conn = self._conns.get(slot)
            if conn is None or conn.dead:
                if conn is not None:
                    await self._drop(slot, conn)
                listed = (lambda: self.listing(server) is not None) if listing else None
                conn = await self._start(server, listed)
                if conn is None:
                    return None
                self._conns[slot] = conn
                self._listings[server.fingerprint] = conn.tools
            conn.pins += pin
            return conn

    def unpin(self, conn: Connection) -> None:
        conn.pins -= 1
        self._signal()

    async def _start(
        self, server: NamedServer, unless: Callable[[], bool] | None = None
    ) -> Connection | None:
        """A started connection to ``server``, in room reserved within ``max_live``; None if
        ``unless()`` became true while waiting for room."""
        if not await self._reserve(unless):
            return None
        conn = Connection(
            server.name, server.config, idle_timeout=self.idle_timeout, on_end=self._signal
        )
        self.starts += 1
        try:
            await conn.start(self.startup_timeout)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await conn.aclose()
            raise
        finally:
            self._starting -= 1
            self._signal()  # room, or a listing, for those waiting
        return conn

    async def call(
        self, server: NamedServer, tool: str, arguments: dict[str, Any], ctx: RuntimeContext
    ) -> Any:
        """Call ``tool`` on the caller's connection; every failure is a ``ToolError`` the model
        can read (a crashed server is dropped and restarted at the next call)."""
        from mcp.shared.exceptions import MCPError

        conn = await self.connection(server, ctx, pin=True)
        try:
            return await conn.call(tool, arguments, self.call_timeout)
        except TimeoutError:
            raise ToolError(
                f"MCP tool {tool!r} of server {server.name!r} did not answer within "
                f"{self.call_timeout:g} seconds; try again with a smaller request"
            ) from None
        except ServerGone as exc:
            await self._drop((server.fingerprint, owner_of(ctx)), conn)
            raise ToolError(f"{exc}; it is restarted at the next call") from None
        except MCPError as exc:
            raise ToolError(
                conn.scrub(
                    f"MCP server {server.name!r} refused the call of {tool!r}: {exc.message}"
                )
            ) from None
        except Exception as exc:  # an answer this client cannot read (it does not fit the schema)
            text = conn.scrub(
                f"MCP tool {tool!r} of server {server.name!r} failed: {type(exc).__name__}: {exc}"
            )
            log.warning("%s", text)
            raise ToolError(text) from None
        finally:
            self.unpin(conn)

    async def aclose(self) -> None:
        """Stop every server of this pool."""
        for slot, conn in list(self._conns.items()):
            await self._drop(slot, conn)

    def held(self) -> int:
        """Servers of this pool that may be running: started, starting or stopping."""
        return len(self._conns) + self._starting + self._closing

    async def _drop(self, slot: tuple[str, Owner], conn: Connection) -> None:
        """Forget ``conn`` and stop it; its room is free once it has stopped."""
        if self._conns.get(slot) is not conn:
            await conn.aclose()
            return
        del self._conns[slot]
        self._closing += 1
        try:
            with anyio.CancelScope(shield=True):
                await conn.aclose()
        finally:
            self._closing -= 1
            self._signal()

    async def _reserve(self, unless: Callable[[], bool] | None = None) -> bool:
        """Room for one more server within ``max_live`` (see the module docstring); False,
        without room, once ``unless()`` is true."""
        with anyio.move_on_after(self.wait_timeout):
            while True:
                changed = self._changed_event()
                if unless is not None and unless():
                    return False
                for slot, conn in list(self._conns.items()):
                    if conn.dead:
                        await self._drop(slot, conn)
                if self.held() < self.max_live:
                    self._starting += 1
                    self.peak = max(self.peak, self.held())
                    return True
                idle = [
                    (c.last_used, s)
                    for s, c in self._conns.items()
                    if c.in_flight == 0 and c.pins == 0
                ]
                if idle:
                    _, slot = min(idle)
                    log.info(
                        "closing MCP server %r to stay within max_live=%d", slot, self.max_live
                    )
                    await self._drop(slot, self._conns[slot])
                else:
                    await changed.wait()
        raise ToolError(
            f"all {self.max_live} MCP server connections of this agent stayed busy for "
            f"{self.wait_timeout:g} seconds; try again later"
        )

    def _changed_event(self) -> anyio.Event:
        loop = asyncio.get_running_loop()
        if self._changed is None or self._changed_loop is not loop:
            self._changed, self._changed_loop = anyio.Event(), loop
        return self._changed

    def _signal(self) -> None:
        """Wake the callers waiting for room (a call ended, a server stopped)."""
        if self._changed is not None:
            self._changed.set()
            self._changed = None
