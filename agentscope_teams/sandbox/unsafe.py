"""``UnsafeHostSandbox``: commands run directly on the host, confined by nothing.

For operators who choose it knowingly (a throwaway VM or container that is itself the boundary,
or a platform without bubblewrap). A command sees and may change every file the service's user
can, reach the network, and leave processes behind that start a session of their own. What it
still gets: the workspace as working directory, the allowlisted environment (no API keys or store
URLs), the timeout and output cap, and the rlimits (``RLIMIT_NPROC`` counts every process of the
service's user here, and does not bind root). It cannot apply a :class:`~.base.PathMask`: the
agent's ``Read`` and ``Edit`` deny rules do not reach its commands. Constructing it logs a
warning.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import ConfigurationError
from .base import PathMask, SandboxLimits
from .environment import sandbox_environment, shell_argv
from .process import HostProcess, HostSandbox

log = logging.getLogger(__name__)


class UnsafeHostSandbox(HostSandbox):
    """Runs commands on the host without isolation (module docstring). ``env`` adds variables to
    every command's environment; ``limits`` are the defaults of every command."""

    name = "unsafe-host"
    contained = False

    def __init__(
        self, *, limits: SandboxLimits | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.env = dict(env or {})
        log.warning(
            "UnsafeHostSandbox: shell commands of agents run on this host WITHOUT a sandbox; "
            "they can read and change any file this user can and reach the network"
        )

    def _spawn(
        self,
        command: str,
        cwd: Path,
        env: Mapping[str, str] | None,
        limits: SandboxLimits,
        lifetime: float | None,
        mask: PathMask | None = None,
    ) -> HostProcess:
        del mask  # nothing here can hide or protect a path (the module docstring)
        where = os.fspath(cwd)
        if not os.path.isdir(where):
            raise ConfigurationError(f"workspace {where} is not a directory")
        full_env = sandbox_environment(
            cwd=where, home=where, tmp=where, extra={**self.env, **(env or {})}
        )
        argv = shell_argv(command, limits)
        return HostProcess(argv, env=full_env, cwd=where, limits=limits, lifetime=lifetime)
