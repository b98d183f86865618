"""Running one command hook: JSON on stdin, exit code, stdout and stderr back.

The command runs through ``/bin/sh -c`` in its own process group (off the event loop, with
:func:`anyio.open_process`), with cwd = the project root and ``CLAUDE_PROJECT_DIR`` set to it.
On its timeout, or if the caller is cancelled, the whole process group is killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream

__all__ = ["CommandResult", "hook_env", "kill_group", "run_command"]

_LIMIT = 1 << 20  # bytes of stdout / stderr kept


@dataclass(frozen=True)
class CommandResult:
    """What a command hook did: its exit code (None: killed on timeout) and its output."""

    code: int | None
    stdout: str
    stderr: str
    pid: int

    @property
    def timed_out(self) -> bool:
        return self.code is None


async def _drain(stream: ByteReceiveStream | None, into: bytearray) -> None:
    if stream is None:
        return
    with contextlib.suppress(
        anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError
    ):
        async for chunk in stream:
            if len(into) < _LIMIT:
                into.extend(chunk[: _LIMIT - len(into)])


def kill_group(pid: int) -> None:
    """Kill the process group ``pid`` leads (gone already: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def hook_env(project_dir: Path) -> dict[str, str]:
    """The environment of a command hook: ours, with ``CLAUDE_PROJECT_DIR``."""
    return {**os.environ, "CLAUDE_PROJECT_DIR": str(project_dir)}


async def run_command(
    command: str, payload: dict[str, Any], *, seconds: float, project_dir: Path
) -> CommandResult:
    """Run ``command`` with ``payload`` as JSON on stdin; kills its group after ``seconds``."""
    env = hook_env(project_dir)
    data = json.dumps(payload, ensure_ascii=False, default=str).encode()
    process = await anyio.open_process(
        ["/bin/sh", "-c", command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(project_dir),
        env=env,
        start_new_session=True,
    )
    out, err = bytearray(), bytearray()
    code: int | None = None
    try:
        with anyio.move_on_after(seconds):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_drain, process.stdout, out)
                tg.start_soon(_drain, process.stderr, err)
                if process.stdin is not None:
                    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                        await process.stdin.send(data)
                    await process.stdin.aclose()
            code = await process.wait()
    finally:
        if code is None:  # timed out or cancelled: nothing of it may live on
            kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return CommandResult(
        code, out.decode(errors="replace"), err.decode(errors="replace"), process.pid
    )
