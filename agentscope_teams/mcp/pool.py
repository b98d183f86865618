"""``McpPool``: the live MCP connections of one agent, keyed by (server, org, user).

Agents are stateless and serve many users at once, so connections cannot live in a call or a
session. They live in a pool owned by the agent (shared with the subagents and team members it
builds), keyed by the server's configuration (its fingerprint: equal configurations share) and the
caller's owner, so **a server is never shared across users**: each (org, user) gets its own
process (stdio) or HTTP session. A caller without a ``user_id`` is keyed by its session, so two
anonymous callers never share either. The cost is one server per active user and server; it is
bounded by ``max_live`` (the least recently used idle connection is closed to make room) and by
``idle_timeout`` (a connection with no call for that long closes itself).

Servers start lazily. A server's tool listing is remembered per configuration once any user's
connection listed it, so another user's first call shows the tools without starting anything: that
user's own server starts only when the model calls one of them. A crashed server is dropped and
started again on the next call. :meth:`McpPool.aclose` stops every server.
"""

from __future__ import annotations

import logging
import weakref
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
    ) -> None:
        if max_live < 1 or not idle_timeout > 0 or not call_timeout > 0 or not startup_timeout > 0:
            raise ValueError("max_live must be >= 1 and the timeouts > 0 seconds")
        self.max_live, self.idle_timeout = max_live, idle_timeout
        self.call_timeout, self.startup_timeout = call_timeout, startup_timeout
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
        """The server's tools, starting the caller's connection if nobody listed them yet."""
        found = self.listing(server)
        if found is not None:
            return found
        await self.connection(server, ctx)
        return self._listings[server.fingerprint]

    async def connection(self, server: NamedServer, ctx: RuntimeContext) -> Connection:
        """The caller's running connection to ``server``, started if needed (ToolError if it
        cannot start)."""
        slot = (server.fingerprint, owner_of(ctx))
        lock = self._locks.get(slot)
        if lock is None:
            lock = self._locks[slot] = anyio.Lock()
        async with lock:
            conn = self._conns.get(slot)
            if conn is not None and not conn.dead:
                return conn
            if conn is not None:
                await self._drop(slot, conn)
            await self._make_room()
            conn = Connection(server.name, server.config, idle_timeout=self.idle_timeout)
            self.starts += 1
            await conn.start(self.startup_timeout)
            self._conns[slot] = conn
            self._listings[server.fingerprint] = conn.tools
            return conn

    async def call(
        self, server: NamedServer, tool: str, arguments: dict[str, Any], ctx: RuntimeContext
    ) -> Any:
        """Call ``tool`` on the caller's connection; every failure is a ``ToolError`` the model
        can read (a crashed server is dropped and restarted at the next call)."""
        from mcp.shared.exceptions import MCPError

        conn = await self.connection(server, ctx)
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
                f"MCP server {server.name!r} refused the call of {tool!r}: {exc.message}"
            ) from None
        except Exception as exc:  # an answer this client cannot read (it does not fit the schema)
            log.warning("MCP tool %r of server %r failed", tool, server.name, exc_info=True)
            raise ToolError(
                conn.scrub(
                    f"MCP tool {tool!r} of server {server.name!r} failed: "
                    f"{type(exc).__name__}: {exc}"
                )
            ) from None

    async def aclose(self) -> None:
        """Stop every server of this pool."""
        conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            await conn.aclose()

    async def _drop(self, slot: tuple[str, Owner], conn: Connection) -> None:
        if self._conns.get(slot) is conn:
            del self._conns[slot]
        await conn.aclose()

    async def _make_room(self) -> None:
        """Forget dead connections; at ``max_live``, close the least recently used idle one."""
        for slot, conn in list(self._conns.items()):
            if conn.dead:
                await self._drop(slot, conn)
        if len(self._conns) < self.max_live:
            return
        idle = [(c.last_used, s) for s, c in self._conns.items() if c.in_flight == 0]
        if not idle:
            raise ToolError(
                f"all {self.max_live} MCP server connections of this agent are busy; "
                "try again when a call has finished"
            )
        _, slot = min(idle)
        log.info("closing MCP server %r to stay within max_live=%d", slot, self.max_live)
        await self._drop(slot, self._conns[slot])
