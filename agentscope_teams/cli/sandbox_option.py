"""``--sandbox bubblewrap|unsafe-host|none``, shared by ``run`` and ``worker``.

Without the option the agents get the shell tools in a bubblewrap sandbox where bubblewrap works,
and no shell tools otherwise (with a one-line notice on stderr saying why). An explicit
``--sandbox bubblewrap`` that cannot work is an error; ``unsafe-host`` warns at start.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import ConfigurationError
from ..sandbox import SANDBOX_NAMES, Sandbox, default_sandbox, resolve_sandbox
from .common import CommandError


def add_sandbox_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sandbox",
        choices=SANDBOX_NAMES,
        metavar="SANDBOX",
        default=None,
        help="where the bash tool runs commands: bubblewrap (Linux namespaces: the workspace is "
        "the only writable path, no network), unsafe-host (no isolation at all), or none (no "
        "bash tool); default: bubblewrap when it works here, else none",
    )


def sandbox_option(args: argparse.Namespace) -> Sandbox | None:
    """The sandbox ``--sandbox`` names (see the module docstring)."""
    chosen: str | None = args.sandbox
    if chosen is None:
        found, why = default_sandbox()
        if found is None:
            short = (why or "").split(";")[0]
            print(
                f"note: the bash tool is not offered ({short}); install bubblewrap, or pass "
                "--sandbox unsafe-host to run commands without a sandbox",
                file=sys.stderr,
            )
        return found
    try:
        sandbox = resolve_sandbox(chosen)
    except ConfigurationError as exc:
        raise CommandError(f"--sandbox {chosen}: {exc}") from None
    if sandbox is not None and not sandbox.contained:
        print(
            "WARNING: --sandbox unsafe-host: the bash tool runs commands on this host without "
            "any isolation",
            file=sys.stderr,
        )
    return sandbox
