"""Which extra installs a missing module, read from the package's own metadata.

A command that imports an optional dependency it lacks (``serve`` without ``uvicorn``) fails with a
``ModuleNotFoundError``; :func:`missing_module_message` turns it into the line that says which extra
to install. The extras come from the installed distribution's requirements
(``extra == "server"`` markers), so a dependency added to ``pyproject.toml`` is known here without
an edit; :data:`IMPORT_NAMES` holds the few distributions whose import name is not their own.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import metadata

DISTRIBUTION = "agentscope-teams"
#: Distribution -> the top-level module it installs, where the two differ.
IMPORT_NAMES = {
    "beautifulsoup4": "bs4",
    "opentelemetry-api": "opentelemetry",
    "opentelemetry-sdk": "opentelemetry",
    "pyyaml": "yaml",
}
#: The extra a command needs, preferred when a missing module is in several extras (uvicorn is in
#: ``server`` and in ``mcp``).
COMMAND_EXTRAS = {"serve": "server", "mcp-serve": "mcp", "review": "review"}
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@cache
def extras_of_modules() -> dict[str, list[str]]:
    """Top-level module -> the extras (not ``dev``) that install it, in declaration order."""
    try:
        requires = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return {}
    found: dict[str, list[str]] = {}
    for requirement in requires:
        extra, name = _EXTRA.search(requirement), _NAME.match(requirement)
        if extra is None or name is None or extra.group(1) == "dev":
            continue
        dist = name.group(1).lower()
        module = IMPORT_NAMES.get(dist, dist.replace("-", "_").replace(".", "_"))
        extras = found.setdefault(module, [])
        if extra.group(1) not in extras:
            extras.append(extra.group(1))
    return found


def missing_module_message(exc: ModuleNotFoundError, command: str | None) -> str:
    """One line: which module is missing, for which command, and what to install."""
    module = (exc.name or "").split(".")[0] or "a module"
    what = f"`agentscope-teams {command}`" if command else "this command"
    extras = extras_of_modules().get(module, [])
    preferred = COMMAND_EXTRAS.get(command or "")
    extra = preferred if preferred in extras else (extras[0] if extras else None)
    if extra is not None:
        return (
            f"{what} needs the Python package {module!r}, which is not installed: run "
            f"`pip install 'agentscope-teams[{extra}]'`"
        )
    return (
        f"{what} needs the Python module {module!r}, which is not installed: install it (or "
        "reinstall agentscope-teams) in this environment"
    )
