"""Sandboxes for shell commands: the :class:`Sandbox` interface, the :class:`BubblewrapSandbox`
backend (Linux namespaces, the workspace the only writable host path, no network by default) and
the explicit, uncontained :class:`UnsafeHostSandbox`. See ``docs/tools-and-sandboxing.md``."""

from __future__ import annotations

from .base import BackgroundProcess, OutputChunk, PathMask, RunResult, Sandbox, SandboxLimits
from .bubblewrap import ETC_ALLOWED, BubblewrapSandbox, find_bwrap
from .environment import PASSED, SANDBOX_PATH, sandbox_environment
from .factory import SANDBOX_NAMES, SandboxName, default_sandbox, resolve_sandbox
from .unsafe import UnsafeHostSandbox

__all__ = [
    "ETC_ALLOWED",
    "PASSED",
    "SANDBOX_NAMES",
    "SANDBOX_PATH",
    "BackgroundProcess",
    "BubblewrapSandbox",
    "OutputChunk",
    "PathMask",
    "RunResult",
    "Sandbox",
    "SandboxLimits",
    "SandboxName",
    "UnsafeHostSandbox",
    "default_sandbox",
    "find_bwrap",
    "resolve_sandbox",
    "sandbox_environment",
]
