"""Choosing a sandbox by name: ``"bubblewrap"``, ``"unsafe-host"``, ``"none"``."""

from __future__ import annotations

from typing import Literal

from ..errors import ConfigurationError
from .base import Sandbox
from .bubblewrap import BubblewrapSandbox
from .unsafe import UnsafeHostSandbox

SandboxName = Literal["bubblewrap", "unsafe-host", "none"]
SANDBOX_NAMES: tuple[str, ...] = ("bubblewrap", "unsafe-host", "none")


def resolve_sandbox(sandbox: Sandbox | str | None) -> Sandbox | None:
    """A Sandbox instance as given, one built from its name, or None (``None`` / ``"none"``:
    no shell tools). ``"bubblewrap"`` raises ConfigurationError where bubblewrap cannot run."""
    if sandbox is None or isinstance(sandbox, Sandbox):
        return sandbox
    if sandbox == "bubblewrap":
        return BubblewrapSandbox()
    if sandbox == "unsafe-host":
        return UnsafeHostSandbox()
    if sandbox == "none":
        return None
    raise ConfigurationError(
        f"unknown sandbox {sandbox!r}; use one of {', '.join(SANDBOX_NAMES)} or a Sandbox instance"
    )


def default_sandbox() -> tuple[Sandbox | None, str | None]:
    """(a BubblewrapSandbox, None) where bubblewrap works, else (None, why it does not)."""
    try:
        return BubblewrapSandbox(), None
    except ConfigurationError as exc:
        return None, str(exc)
