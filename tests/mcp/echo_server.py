"""A small stdio MCP server for the tests: echo (with its pid), a failing tool, a crash, a sleep.

With ``ECHO_LIVE_DIR`` set, it counts at start-up how many other echo servers of that folder run
(their pid files, zombies excluded, under a lock) and appends the count to ``observed``: a
deterministic record of how many servers ran at once.
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("echo")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Echo the text back, with the pid of this server."""
    return f"echo: {text} (pid {os.getpid()}, token {os.environ.get('ECHO_TOKEN', '-')})"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(reason)


@server.tool()
def delete_everything(path: str) -> str:
    """Pretends to delete ``path`` (not annotated: destructive by default, so it asks)."""
    return f"deleted {path}"


@server.tool(annotations=ToolAnnotations(destructive_hint=False))
def crash() -> str:
    """Exits the server process (a crash)."""
    print(f"echo server: crashing on purpose, argv {sys.argv}", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool(annotations=ToolAnnotations(destructive_hint=False))
async def sleep(seconds: float) -> str:
    """Sleeps, then answers."""
    await anyio.sleep(seconds)
    return "slept"


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _count_live(folder: Path) -> None:
    with (folder / "lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        others = [p for p in folder.glob("*.pid") if _running(int(p.stem))]
        with (folder / "observed").open("a") as observed:
            observed.write(f"{len(others)}\n")
        (folder / f"{os.getpid()}.pid").touch()


if __name__ == "__main__":
    if os.environ.get("ECHO_LIVE_DIR"):
        _count_live(Path(os.environ["ECHO_LIVE_DIR"]))
    server.run()
