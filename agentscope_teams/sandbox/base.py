"""The :class:`Sandbox` interface: run a shell command confined to one workspace directory.

A sandbox runs ``bash -c COMMAND`` with the workspace as its working directory, an environment
built from an allowlist (:mod:`.environment`) and the :class:`SandboxLimits` of the call. In the
foreground (:meth:`Sandbox.run`) it returns when the command ended or its timeout passed, and
nothing the command started is left running; in the background (:meth:`Sandbox.start`) it returns
a :class:`BackgroundProcess` whose new output can be read and which can be killed.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigurationError

MIB = 1024 * 1024
GIB = 1024 * MIB


@dataclass(frozen=True)
class SandboxLimits:
    """What one command may use.

    ``timeout`` (seconds) ends a foreground command and every process it started;
    ``max_output_bytes`` caps the captured output (its head and tail are kept, the middle is
    replaced by a note with the omitted byte count); ``max_processes`` bounds the processes and
    threads the command may run at once, ``max_memory_bytes`` the address space of each of them
    (``RLIMIT_AS``), ``max_file_bytes`` the size of any file it writes (``RLIMIT_FSIZE``);
    ``tmp_bytes`` the size of the sandbox's private ``/tmp`` (and of its ``/dev/shm``);
    ``background_seconds`` how long a background command may run at most. ``None`` means
    unbounded (an operator's explicit choice).
    """

    timeout: float = 120.0
    max_output_bytes: int = 30_000
    max_processes: int | None = 512
    max_memory_bytes: int | None = 4 * GIB
    max_file_bytes: int | None = 1 * GIB
    tmp_bytes: int = 256 * MIB
    background_seconds: float = 3600.0

    def __post_init__(self) -> None:
        for name in ("timeout", "background_seconds"):
            if not getattr(self, name) > 0:
                raise ConfigurationError(f"SandboxLimits.{name} must be > 0 seconds")
        for name in ("max_output_bytes", "tmp_bytes"):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"SandboxLimits.{name} must be >= 1")
        for name in ("max_processes", "max_memory_bytes", "max_file_bytes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigurationError(f"SandboxLimits.{name} must be >= 1 or None")


@dataclass(frozen=True)
class PathMask:
    """Paths of the workspace (absolute host paths, each inside it) a command must not read
    (``hidden``) or change (``read_only``): what the agent's ``Read`` and ``Edit`` deny rules
    cover, expanded against the files that exist when the command starts
    (:meth:`~agentscope_teams.tools.PermissionEngine.sandbox_mask`). The bubblewrap backend mounts
    an empty read-only directory over a hidden directory and an unreadable empty file over a
    hidden file, and binds the ``read_only`` paths read-only; the unsafe host backend cannot
    enforce it and ignores it. Empty (false): nothing to hide.

    A path of either list may not exist yet (a rule naming one place: ``Read(secrets/**)``,
    ``Read(/.env)``): the bubblewrap backend makes an empty placeholder there for the command's
    life (:mod:`.placeholders`), a directory if the path is in ``directories``, else a file, so
    the path stays masked if it comes to be while the command runs."""

    hidden: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    directories: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.hidden or self.read_only)


@dataclass(frozen=True)
class RunResult:
    """How a foreground command ended: its exit code (negative: killed by that signal), its
    combined stdout and stderr (with the cut noted in place), the bytes left out of it, and
    whether the timeout ended it."""

    exit_code: int
    output: str
    omitted_bytes: int = 0
    timed_out: bool = False


@dataclass(frozen=True)
class OutputChunk:
    """What a background command wrote since the last read, and whether it still runs."""

    output: str
    omitted_bytes: int
    running: bool
    exit_code: int | None


class BackgroundProcess(abc.ABC):
    """A command started by :meth:`Sandbox.start`. It lives in this process only."""

    @abc.abstractmethod
    async def read(self) -> OutputChunk:
        """The output written since the previous read (capped like a foreground run's)."""

    @property
    @abc.abstractmethod
    def running(self) -> bool:
        """Whether the command is still running."""

    @abc.abstractmethod
    async def kill(self) -> None:
        """Stop the command and everything it started; a no-op once it has ended."""


class Sandbox(abc.ABC):
    """Runs shell commands confined to a workspace (see the module docstring).

    ``name`` says which backend it is (shown in tool results); ``contained`` is False only for
    :class:`~.unsafe.UnsafeHostSandbox`, which confines nothing.
    """

    name: str = "sandbox"
    contained: bool = True

    @abc.abstractmethod
    async def run(
        self,
        command: str,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        limits: SandboxLimits | None = None,
        *,
        mask: PathMask | None = None,
    ) -> RunResult:
        """Run ``command`` in ``cwd`` (the workspace) until it ends or its timeout passes.
        ``env`` adds variables to the allowlisted environment; ``mask`` hides or protects paths
        of the workspace (:class:`PathMask`; callers pass it only when it is not empty)."""

    @abc.abstractmethod
    async def start(
        self,
        command: str,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        limits: SandboxLimits | None = None,
        *,
        mask: PathMask | None = None,
    ) -> BackgroundProcess:
        """Start ``command`` in ``cwd`` in the background (killed after ``background_seconds``);
        ``mask`` as for :meth:`run`."""
