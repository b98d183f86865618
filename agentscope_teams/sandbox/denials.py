"""What a sandbox refused a command, told apart from the command's own failure.

A contained sandbox does not stop a command before it runs: the command runs and the kernel
refuses what the sandbox does not allow (a write outside the workspace, the network). Those
refusals reach the command's output as the C library's fixed messages; :func:`denial_in` names
the first it finds, so the ``bash`` tool can mark its result (``ShellResult.sandbox_denial``) and
the dashboard can list it as a sandbox denial. Only a contained sandbox's failed command is read.
"""

from __future__ import annotations

#: The system's message -> what the sandbox refused.
REFUSALS = {
    "Read-only file system": "a write outside the workspace (the rest of the file system is read-only)",
    "Network is unreachable": "network access (the sandbox has no network)",
    "Temporary failure in name resolution": "network access (the sandbox has no network)",
    "Could not resolve host": "network access (the sandbox has no network)",
    "Operation not permitted": "an operation the sandbox does not permit",
}


def denial_in(output: str, *, contained: bool, exit_code: int) -> str | None:
    """What the sandbox refused, if ``output`` of a failed command in a contained sandbox
    shows a refusal; else None."""
    if not contained or exit_code == 0:
        return None
    return next((what for message, what in REFUSALS.items() if message in output), None)
