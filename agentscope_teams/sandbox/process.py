"""A host process for a sandbox backend: spawned in a session of its own, its combined output
pumped by a thread into an :class:`~.capture.OutputBuffer`, its whole process group killed on
timeout, cancellation, end of its lifetime or :meth:`HostProcess.kill`.

The process group is the unit that is killed: the backend's ``argv`` is started as a session
leader, so ``killpg`` reaches it and every descendant that did not start a session of its own
(bubblewrap's PID namespace takes care of those; the unsafe backend cannot).
"""

from __future__ import annotations

import abc
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import anyio

from .base import BackgroundProcess, OutputChunk, PathMask, RunResult, Sandbox, SandboxLimits
from .capture import OutputBuffer

#: How long the output of an ended command is still drained (descendants of an unsafe-host
#: command that escaped the process group may hold the pipe open for ever).
DRAIN_SECONDS = 1.0


class HostProcess(BackgroundProcess):
    """One spawned command (see the module docstring).

    ``lifetime`` (seconds) kills it when it runs that long; ``on_exit`` runs once after it was
    reaped (the bubblewrap backend removes its cgroup there).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str],
        cwd: str,
        limits: SandboxLimits,
        lifetime: float | None = None,
        on_exit: Callable[[], None] | None = None,
    ) -> None:
        self.limits = limits
        self.buffer = OutputBuffer(limits.max_output_bytes)
        self._on_exit = on_exit
        self._eof = threading.Event()
        self._exited = False
        self.popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        assert self.popen.stdout is not None
        out = self.popen.stdout
        threading.Thread(target=self._pump, args=(out,), name="sandbox-output", daemon=True).start()
        self._timer: threading.Timer | None = None
        if lifetime is not None:
            self._timer = threading.Timer(lifetime, self._kill_group)
            self._timer.daemon = True
            self._timer.start()

    def _pump(self, out: object) -> None:
        """Copy the pipe into the buffer until every writer closed it, then close it."""
        fd = out.fileno()  # type: ignore[attr-defined]
        try:
            while chunk := os.read(fd, 65536):
                self.buffer.add(chunk)
        except OSError:
            pass
        finally:
            out.close()  # type: ignore[attr-defined]
            self._eof.set()

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        if self.popen.poll() is None:
            return True
        self._reaped()
        return False

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)

    def stop(self, why: str) -> None:
        """Kill the command now from any thread, ``why`` noted at the end of its output (a
        sentence saying what happened and what to do)."""
        if self.popen.poll() is None:
            self._kill_group()
            self.buffer.add(f"\n[{why}]\n".encode())

    def _reaped(self) -> None:
        if self._exited:
            return
        self._exited = True
        if self._timer is not None:
            self._timer.cancel()
        self._kill_group()  # what the command left behind in its group
        if self._on_exit is not None:
            self._on_exit()

    async def _drain(self) -> None:
        """Wait (boundedly) for the pump to reach the end of the output."""
        if not self._eof.is_set():
            await anyio.to_thread.run_sync(self._eof.wait, DRAIN_SECONDS)

    async def _wait_exit(self) -> None:
        """Until the process has exited (not reaped): its pidfd turns readable, where Linux has
        pidfds; else a worker thread waits for it."""
        if self.popen.poll() is not None:
            return
        try:
            fd = os.pidfd_open(self.popen.pid)
        except (AttributeError, OSError):
            await anyio.to_thread.run_sync(self.popen.wait, abandon_on_cancel=True)
            return
        try:
            await anyio.wait_readable(fd)
        finally:
            os.close(fd)

    async def finish(self) -> RunResult:
        """Wait for the command up to its timeout, then stop what is left and collect the output.
        Cancelled, it kills the command first."""
        timed_out = False
        try:
            with anyio.move_on_after(self.limits.timeout) as scope:
                await self._wait_exit()
            timed_out = scope.cancelled_caught
        finally:
            with anyio.CancelScope(shield=True):
                await self.kill()
        await self._drain()
        output, omitted = self.buffer.take()
        code = self.popen.returncode
        return RunResult(exit_code=code, output=output, omitted_bytes=omitted, timed_out=timed_out)

    async def kill(self) -> None:
        if self.popen.poll() is None:
            self._kill_group()
            await self._wait_exit()
            self.popen.wait()  # it has exited: this only reaps it
        self._reaped()

    async def read(self) -> OutputChunk:
        running = self.running
        if not running:
            await self._drain()
        output, omitted = self.buffer.take()
        code = None if running else self.popen.returncode
        return OutputChunk(output=output, omitted_bytes=omitted, running=running, exit_code=code)


class HostSandbox(Sandbox):
    """A backend whose commands are :class:`HostProcess` es: ``run`` waits for one, ``start``
    leaves it in the background for its ``background_seconds``; a subclass says how to spawn."""

    limits: SandboxLimits

    @abc.abstractmethod
    def _spawn(
        self,
        command: str,
        cwd: Path,
        env: Mapping[str, str] | None,
        limits: SandboxLimits,
        lifetime: float | None,
        mask: PathMask | None = None,
    ) -> HostProcess:
        """The process running ``command`` (killed after ``lifetime`` seconds when given) with
        ``mask`` applied where the backend can."""

    async def run(
        self,
        command: str,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        limits: SandboxLimits | None = None,
        *,
        mask: PathMask | None = None,
    ) -> RunResult:
        return await self._spawn(command, cwd, env, limits or self.limits, None, mask).finish()

    async def start(
        self,
        command: str,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        limits: SandboxLimits | None = None,
        *,
        mask: PathMask | None = None,
    ) -> BackgroundProcess:
        chosen = limits or self.limits
        return self._spawn(command, cwd, env, chosen, chosen.background_seconds, mask)
