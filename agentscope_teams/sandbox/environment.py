"""What a sandboxed command starts with: an environment from an allowlist, and the shell prelude
that applies the per-command resource limits before the command runs.

Nothing of the host's environment is passed on except the variables named in :data:`PASSED`
(locale and terminal settings); API keys, store URLs and tokens therefore never reach a command.
Variables an operator wants a command to see are given explicitly (``env=`` of the sandbox).
"""

from __future__ import annotations

import os
import re
import resource
import shlex
from collections.abc import Mapping

from ..errors import ConfigurationError
from .base import SandboxLimits

#: The PATH inside the sandbox (the host's may name directories the sandbox does not have).
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#: Host variables copied when set: locale and terminal only.
PASSED = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "TERM", "TZ")

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def sandbox_environment(
    *, cwd: str, home: str, tmp: str, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The complete environment of a command: fixed values, :data:`PASSED` host values, ``extra``."""
    env = {
        "PATH": SANDBOX_PATH,
        "HOME": home,
        "TMPDIR": tmp,
        "PWD": cwd,
        "SHELL": "/bin/bash",
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
    }
    env.update({k: os.environ[k] for k in PASSED if os.environ.get(k)})
    for key, value in (extra or {}).items():
        if not _NAME.match(key) or "\0" in value:
            raise ConfigurationError(
                f"sandbox environment variable {key!r} is not a valid name/value"
            )
        env[key] = value
    return env


def _hard(limit: int) -> int | None:
    hard = resource.getrlimit(limit)[1]
    return None if hard == resource.RLIM_INFINITY else hard


def _bounded(wanted: int | None, hard: int | None) -> int | None:
    """``wanted`` lowered to the inherited hard limit (which the shell could not raise anyway)."""
    if wanted is None:
        return hard
    return wanted if hard is None else min(wanted, hard)


def limits_prelude(limits: SandboxLimits) -> str:
    """Shell code setting the hard and soft limits of ``limits``, then running ``$1``.

    Run as ``bash -c PRELUDE sandbox COMMAND``. The limits are set as hard limits, which the
    command cannot raise again (that needs ``CAP_SYS_RESOURCE``, which a sandboxed process lacks).
    Inside bubblewrap's user namespace the process count is that of the sandbox alone; it does not
    bind processes of uid 0 on the host (the bubblewrap backend uses a pids cgroup then).
    """
    steps: list[str] = []
    nproc = _bounded(limits.max_processes, _hard(resource.RLIMIT_NPROC))
    if nproc is not None:
        steps.append(f"ulimit -H -S -u {nproc}")
    memory = _bounded(limits.max_memory_bytes, _hard(resource.RLIMIT_AS))
    if memory is not None:
        steps.append(f"ulimit -H -S -v {max(memory // 1024, 1)}")
    fsize = _bounded(limits.max_file_bytes, _hard(resource.RLIMIT_FSIZE))
    if fsize is not None:
        steps.append(f"ulimit -H -S -f {max(fsize // 1024, 1)}")
    steps.append('exec /bin/bash -c "$1"')
    return " && ".join(steps)


def shell_argv(command: str, limits: SandboxLimits) -> list[str]:
    """``bash -c PRELUDE sandbox COMMAND``: the command as its own argument, never spliced."""
    return ["/bin/bash", "-c", limits_prelude(limits), "sandbox", command]


def quoted(argv: list[str]) -> str:
    """An argv as one shell-quoted line (for log messages)."""
    return shlex.join(argv)
