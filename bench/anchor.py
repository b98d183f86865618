"""Drive an AgentScope 2.0.11 measurement (``bench/anchor_*.py``) in its own virtualenv.

The reference implementation is installed next to, never into, this project's environment::

    python3.11 -m venv bench/.anchor-venv
    bench/.anchor-venv/bin/pip install -r bench/requirements-anchor.txt

``AGENTSCOPE_TEAMS_ANCHOR_PYTHON`` may name another interpreter. An anchor script is a long-lived worker:
it prints one JSON line when ready, then answers each ``round <ops>`` line on stdin with one JSON line
``{"per_op": seconds}``, so the sections interleave its rounds with their own, like any baseline.
When the interpreter is absent (CI) the sections print a skip note instead of the anchor figures.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

HERE = Path(__file__).resolve().parent
DEFAULT_PYTHON = HERE / ".anchor-venv" / "bin" / "python"
INSTALL_HINT = (
    "install it with `python3.11 -m venv bench/.anchor-venv && "
    "bench/.anchor-venv/bin/pip install -r bench/requirements-anchor.txt`"
)


def anchor_python() -> Path | None:
    """The interpreter that has AgentScope 2.0.11, or None."""
    configured = os.environ.get("AGENTSCOPE_TEAMS_ANCHOR_PYTHON")
    path = Path(configured) if configured else DEFAULT_PYTHON
    return path if path.exists() else None


def skip_note() -> str:
    where = os.environ.get("AGENTSCOPE_TEAMS_ANCHOR_PYTHON") or "bench/.anchor-venv"
    return f"skipped: no AgentScope 2.0.11 interpreter at {where}; {INSTALL_HINT}"


class AnchorError(RuntimeError):
    """The anchor worker failed; the message carries its stderr."""


class Anchor:
    """A running ``bench/anchor_<name>.py`` worker."""

    def __init__(self, script: str, *args: str, baseline: str | None = None) -> None:
        """``baseline``: run ``script`` with this project's interpreter and ``baseline`` (another
        agentscope-teams tree) as its ``PYTHONPATH``, to compare two versions in one run."""
        python = Path(sys.executable) if baseline is not None else anchor_python()
        if python is None:
            raise AnchorError(skip_note())
        self.baseline = baseline
        self.command = [str(python), str(HERE / script), *args]
        self.ready: dict[str, Any] = {}
        self._proc: Process | None = None
        self._out: BufferedByteReceiveStream | None = None

    async def __aenter__(self) -> Self:
        # A clean environment for the other interpreter: nothing of this project on its path.
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        if self.baseline is not None:
            env["PYTHONPATH"] = self.baseline
        self._proc = await anyio.open_process(self.command, env=env, cwd=str(HERE))
        assert self._proc.stdout is not None
        self._out = BufferedByteReceiveStream(self._proc.stdout)
        self.ready = await self._line()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with anyio.move_on_after(10, shield=True):
            try:
                if proc.stdin is not None:
                    await proc.stdin.send(b"quit\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
        await proc.aclose()

    async def round(self, ops: int) -> float:
        """Run one round of ``ops`` operations in the worker; returns its seconds per op."""
        await self._send(f"round {ops}")
        return float((await self._line())["per_op"])

    async def command_json(self, line: str) -> dict[str, Any]:
        """Send any command the worker understands and return its JSON answer."""
        await self._send(line)
        return await self._line()

    async def _send(self, line: str) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        await self._proc.stdin.send((line + "\n").encode())

    async def _line(self) -> dict[str, Any]:
        assert self._proc is not None and self._out is not None
        try:
            raw = await self._out.receive_until(b"\n", 1 << 20)
        except (anyio.EndOfStream, anyio.IncompleteRead) as exc:
            err = b""
            if self._proc.stderr is not None:
                with anyio.move_on_after(5):
                    async for chunk in self._proc.stderr:
                        err += chunk
            tail = err.decode(errors="replace").strip().splitlines()[-15:]
            raise AnchorError(
                f"{' '.join(self.command[1:])} exited: " + "\n".join(tail or ["(no stderr)"])
            ) from exc
        answer: dict[str, Any] = json.loads(raw)
        if "error" in answer:
            raise AnchorError(f"{self.command[1]}: {answer['error']}")
        return answer


def baseline_path() -> str | None:
    """The agentscope-teams tree to compare against (``AGENTSCOPE_TEAMS_BASELINE_PATH``, e.g. a
    checkout of main), or None: sections then show this tree only."""
    found = os.environ.get("AGENTSCOPE_TEAMS_BASELINE_PATH")
    return found if found and Path(found, "agentscope_teams").is_dir() else None


__all__ = ["Anchor", "AnchorError", "anchor_python", "baseline_path", "skip_note"]

if __name__ == "__main__":  # pragma: no cover - a quick probe: python -m bench.anchor
    print(anchor_python() or skip_note(), file=sys.stderr)
