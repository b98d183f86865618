"""Sandbox denials: one event per shell command refused, whoever refused it.

Two things refuse a shell command. The permission engine refuses it before it runs (a deny rule
such as ``Bash(rm:*)``, plan mode, the dontAsk mode, a PermissionRequest hook). A contained
sandbox does not stop a command before it runs: the command runs and the kernel refuses what the
sandbox does not allow (a write outside the workspace, the network); those refusals reach the
command's output as the C library's fixed messages, which :func:`denial_in` recognises in a
foreground command's output and :class:`DenialWatch` in a background command's, read a piece at a
time (only a contained sandbox's failed command is read).

Either way the refusal is one :class:`SandboxDenial`, made and counted here (:func:`recorded`:
``agentscope_teams_sandbox_denials_total{reason}``) and kept in the tool result's ``data``
(:func:`result_data` for a refused command; ``ShellResult.sandbox_denial`` for a run one,
``ShellOutput.sandbox_denial`` on the read that first reports a background command's end), which
the dashboard's errors panel reads as it is. Nothing else counts or recognises a sandbox denial.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from .. import tracing

#: Why a command was refused: the permission engine, or the kernel inside a contained sandbox
#: refused a write outside the workspace, the network, or another operation (the metric's
#: ``reason`` label: :data:`agentscope_teams.tracing.metrics.SANDBOX_REASONS`, the same set).
DenialReason = Literal["permission", "filesystem", "network", "operation"]

_WRITE = "a write outside the workspace (the rest of the file system is read-only)"
_NETWORK = "network access (the sandbox has no network)"
#: The system's message -> why, and what the sandbox refused.
REFUSALS: dict[str, tuple[DenialReason, str]] = {
    "Read-only file system": ("filesystem", _WRITE),
    "Network is unreachable": ("network", _NETWORK),
    "Temporary failure in name resolution": ("network", _NETWORK),
    "Could not resolve host": ("network", _NETWORK),
    "Operation not permitted": ("operation", "an operation the sandbox does not permit"),
}
#: What the permission engine's refusal was by: a deny rule, plan mode (read-only), the dontAsk
#: mode (nobody to ask) or a PermissionRequest hook.
PermissionCause = Literal["rule", "plan_mode", "dont_ask", "hook"]


class SandboxDenial(BaseModel):
    """One shell command refused: ``reason`` (a :data:`DenialReason`), ``what`` was refused (for
    a person) and, for the permission engine's refusals, its ``cause``."""

    model_config = ConfigDict(frozen=True)

    reason: DenialReason
    what: str
    cause: PermissionCause | None = None

    @model_validator(mode="before")
    @classmethod
    def _stored_text(cls, value: Any) -> Any:
        """A result stored before denials were events kept only ``what`` (a string)."""
        if isinstance(value, str):
            found = next((r for r, what in REFUSALS.values() if what == value), "operation")
            return {"reason": found, "what": value}
        return value


def recorded(denial: SandboxDenial) -> SandboxDenial:
    """Count ``denial`` (when metrics are on) and return it: call it once per refused command."""
    tracing.sandbox_denial(denial.reason)
    return denial


def _refusal_in(output: str) -> SandboxDenial | None:
    """The kernel's refusal whose message ``output`` shows, not recorded; else None."""
    found = next((r for message, r in REFUSALS.items() if message in output), None)
    return None if found is None else SandboxDenial(reason=found[0], what=found[1])


def denial_in(output: str, *, contained: bool, exit_code: int) -> SandboxDenial | None:
    """The kernel's refusal that ``output`` of a failed command in a contained sandbox shows,
    recorded (:func:`recorded`); else None."""
    if not contained or exit_code == 0:
        return None
    found = _refusal_in(output)
    return None if found is None else recorded(found)


#: The longest refusal message less one: the text a read keeps to find a message cut between reads.
_CARRY = max(map(len, REFUSALS)) - 1


class DenialWatch:
    """The kernel's refusal in the output of a background command, read a piece at a time.

    :meth:`seen` is given each piece read (a message cut between two pieces is still found);
    :meth:`ended` is told the exit code each time the command's end is read and returns the
    denial, recorded, the first time only: one event per command however often it is polled.
    """

    __slots__ = ("_contained", "_found", "_reported", "_tail")

    def __init__(self, *, contained: bool) -> None:
        self._contained = contained
        self._found: SandboxDenial | None = None
        self._reported = False
        self._tail = ""

    def seen(self, output: str) -> None:
        """Look for a refusal in ``output``, the piece read after the previous one."""
        if not self._contained or self._found is not None:
            return
        text = self._tail + output
        self._found = _refusal_in(text)
        self._tail = text[-_CARRY:]

    def ended(self, exit_code: int | None) -> SandboxDenial | None:
        """The denial of the command that ended with ``exit_code``, recorded, if the command
        failed and this is the first time its end is read; else None."""
        if exit_code is None or self._reported:
            return None
        self._reported = True
        if exit_code == 0 or self._found is None:
            return None
        return recorded(self._found)


def refused_command(cause: PermissionCause, why: str) -> SandboxDenial:
    """The permission engine refused a shell command (``why``: the reason the model reads),
    recorded (:func:`recorded`)."""
    return recorded(SandboxDenial(reason="permission", what=why, cause=cause))


def result_data(denial: SandboxDenial) -> dict[str, Any]:
    """The ``data`` of the error result of a command refused before it ran: its kind (as every
    refused call's) and the denial itself."""
    return {"error_kind": "sandbox_denial", "sandbox_denial": denial.model_dump(mode="json")}
