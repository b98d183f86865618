"""One live connection to one MCP server, held open by a task of its own.

The SDK's transports are async context managers bound to the task that entered them; a connection
outlives the agent call that started it, so :class:`Connection` enters the client in a background
asyncio task (as the subagent and team runtimes do) and tool calls from any task of the same event
loop use the session it holds. The task ends, closing the server, on :meth:`Connection.aclose`,
after ``idle_timeout`` seconds without a call in flight, or when the server goes away (a crashed
process, a closed HTTP session): the connection is then :attr:`~Connection.dead` and its pool
starts a new one on the next use.

A stdio server's stderr goes to a temporary file; its last lines are quoted when the server fails
to start (the file is read after the server stopped and before it is closed) or stops, so the
model and the logs say why. Every such text goes through :meth:`Connection.scrub` first
(:func:`~.config.redact`): an argument, environment or header value never reaches the model or a
log, even when the server prints its own command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import tempfile
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

import anyio

from ..errors import ConfigurationError, MissingDependencyError, ToolError
from .config import HttpServer, StdioServer, redact, safe_url

log = logging.getLogger(__name__)

STDERR_TAIL = 400
STDERR_LINES = 3


def _sdk() -> Any:
    try:
        import mcp
    except ImportError as exc:
        raise MissingDependencyError("MCP servers", "mcp", ["mcp"]) from exc
    return mcp


class ServerGone(Exception):
    """The server stopped (or never answered) while a call was in flight."""


class Connection:
    """A started (or starting) client session to ``server`` called ``name``."""

    def __init__(
        self,
        name: str,
        server: StdioServer | HttpServer,
        *,
        idle_timeout: float,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        self.name, self.server, self.idle_timeout = name, server, idle_timeout
        self.on_end = on_end  # called when the holding task ends (the server stopped)
        self.in_flight = 0
        self.pins = 0  # callers about to call (the pool does not close it for room meanwhile)
        self.last_used = anyio.current_time()
        self.loop = asyncio.get_running_loop()
        self.tools: list[Any] = []
        self._client: Any = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._touched = anyio.Event()
        self._error: BaseException | None = None
        self._stderr: IO[str] | None = None
        self._task: asyncio.Task[None] | None = None
        self._broken = False  # stopped, crashed or closing: never used again

    @property
    def dead(self) -> bool:
        """True once the server stopped (also between calls), the holding task ended (closed,
        idle, crashed) or it runs on another event loop than the caller's."""
        task = self._task
        return (
            self._broken
            or task is None
            or task.done()
            or self.loop is not _running_loop()
            or _transport_closed(self._client)
        )

    async def start(self, seconds: float) -> None:
        """Start the server, connect and list its tools; raises ``ToolError`` saying why not."""
        # An empty context, not tracing.fresh_context(): the pooled connection outlives this call
        # and serves later ones, so it must not keep this call's span, provider or usage meter.
        self._task = self.loop.create_task(
            self._hold(), name=f"mcp server {self.name}", context=contextvars.Context()
        )
        with anyio.move_on_after(seconds) as scope:
            await self._ready.wait()
        if scope.cancelled_caught:
            problem = f"did not start within {seconds:g} seconds"
        elif self._error is not None:
            problem = f"could not start: {_describe(self._error)}"
        else:
            return
        await self._stop_task()  # the server has stopped: its stderr is complete
        tail = self._stderr_tail()
        await self.aclose()
        raise ToolError(self.scrub(f"MCP server {self.name!r} {problem}{tail}"))

    async def call(self, tool: str, arguments: dict[str, Any], seconds: float) -> Any:
        """``tools/call``; ``TimeoutError`` after ``seconds``, ``ServerGone`` if the server stopped."""
        if self.dead or self._client is None:
            raise ServerGone(f"MCP server {self.name!r} is not running")
        self.in_flight += 1
        self.last_used = anyio.current_time()
        try:
            with anyio.fail_after(seconds):
                return await self._client.call_tool(tool, arguments)
        except TimeoutError:
            raise
        except Exception as exc:
            if not (_closed_connection(exc) or self.dead):
                raise  # an error answer of a live server: the pool makes it a tool error
            self._broken = True
            self._stop.set()
            raise ServerGone(
                self.scrub(
                    f"MCP server {self.name!r} stopped while running {tool!r}: {_describe(exc)}"
                    f"{self._stderr_tail()}"
                )
            ) from exc
        finally:
            self.in_flight -= 1
            self.last_used = anyio.current_time()
            self._touched.set()

    async def aclose(self) -> None:
        """Stop the server and wait for its task to end. A connection of another event loop (a
        finished ``anyio.run``) cannot be reached from this one: it is only forgotten."""
        await self._stop_task()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    async def _stop_task(self) -> None:
        task = self._task
        if self.loop is _running_loop():
            self._stop.set()
            if task is not None and not task.done():
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(task), timeout=10)
                if not task.done():
                    task.cancel()

    # -- the holding task -----------------------------------------------------------------------

    async def _hold(self) -> None:
        try:
            async with self._open() as client:
                self._client = client
                self.tools = await _list_all(client)
                self.last_used = anyio.current_time()  # idle from now, not from the spawn
                self._ready.set()
                await self._wait_until_done()
        except BaseException as exc:  # reported to the starter, or seen as ``dead`` by the pool
            self._error = exc
            if not isinstance(exc, Exception):
                raise
            if self._ready.is_set():
                log.warning(
                    "%s",
                    self.scrub(
                        f"MCP server {self.name!r} stopped: {_describe(exc)}{self._stderr_tail()}"
                    ),
                )
        finally:
            self._client = None
            self._ready.set()
            if self.on_end is not None:
                self.on_end()

    async def _wait_until_done(self) -> None:
        """Until ``aclose`` or ``idle_timeout`` seconds with no call in flight."""
        while not self._stop.is_set():
            idle_for = anyio.current_time() - self.last_used
            wait = self.idle_timeout - idle_for if self.in_flight == 0 else self.idle_timeout
            if wait <= 0:
                log.info("closing idle MCP server %r", self.name)
                self._broken = True  # no new call may start on it from now on
                return
            self._touched = anyio.Event()
            with anyio.move_on_after(wait):
                async with anyio.create_task_group() as tg:

                    async def stop_waits() -> None:
                        await self._stop.wait()
                        tg.cancel_scope.cancel()

                    tg.start_soon(stop_waits)
                    await self._touched.wait()
                    tg.cancel_scope.cancel()

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[Any]:
        mcp = _sdk()
        if isinstance(self.server, StdioServer):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            # closed in aclose(): it outlives this block so a crash can still be explained
            self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            params = StdioServerParameters(
                command=self.server.command,
                args=list(self.server.args),
                env=dict(self.server.env) or None,
                cwd=self.server.cwd,
            )
            async with mcp.Client(stdio_client(params, errlog=self._stderr), cache=None) as c:
                yield c
            return
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = create_mcp_http_client(headers=dict(self.server.headers) or None)
        async with (
            http,
            mcp.Client(streamable_http_client(self.server.url, http_client=http), cache=None) as c,
        ):
            yield c

    def scrub(self, text: str) -> str:
        """``text`` without what of this server may be secret (see :func:`~.config.redact`)."""
        return redact(self.server, text)

    def _stderr_tail(self) -> str:
        err = self._stderr
        if err is None:
            return ""
        try:
            err.flush()
            size = err.seek(0, 2)
            err.seek(max(0, size - 4 * STDERR_TAIL))
            lines = [line.strip() for line in err.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        tail = " | ".join(lines[-STDERR_LINES:])[-STDERR_TAIL:]
        return f"; its stderr ends with: {tail}" if tail else ""

    def __repr__(self) -> str:
        where = (
            safe_url(self.server.url)
            if isinstance(self.server, HttpServer)
            else self.server.command
        )
        return f"Connection({self.name!r}, {where!r}, dead={self.dead})"


async def _list_all(client: Any) -> list[Any]:
    """Every tool of the server, page by page (bounded)."""
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _closed_connection(exc: BaseException) -> bool:
    """The SDK's "connection closed" error (the server went away), as opposed to an error answer."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    return isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED


def _transport_closed(client: Any) -> bool:
    """Whether the SDK saw the server's end of the connection close (a stdio server that exited
    between calls): its JSON-RPC dispatcher is then closed for good. Read through ``getattr`` (the
    SDK offers no public flag; a later SDK without it makes this False, and a dead server is then
    found by the next call, which fails with a readable error and restarts it)."""
    if client is None:
        return False
    session = getattr(client, "_session", None)
    dispatcher = getattr(session, "_dispatcher", None)
    return getattr(dispatcher, "_closed", False) is True


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _describe(exc: BaseException) -> str:
    """One line naming the failure (exception groups unwrapped); never a secret-bearing repr."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"command not found ({exc.filename or exc})"
    if isinstance(exc, ConfigurationError):
        return str(exc)
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"
