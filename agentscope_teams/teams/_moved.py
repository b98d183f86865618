"""The old module paths of ``agentscope_teams.teams`` (before its split into subpackages).

Each old path imports as the module that now holds its code (the very same module object) and
warns with a :class:`DeprecationWarning` naming the new path. One import hook does it, installed
by ``agentscope_teams.teams``; there are no files at the old paths.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

_PACKAGE = "agentscope_teams.teams"

#: Old module (under ``agentscope_teams.teams``) -> its new home (ditto).
MOVED: dict[str, str] = {
    "models": "rules.models",
    "limits": "rules.limits",
    "eligibility": "rules.eligibility",
    "schemas": "rules.schemas",
    "queue": "queues.base",
    "queue_redis": "queues.redis",
    "queue_redis_lua": "queues.redis_lua",
    "queue_sql": "queues.sql",
    "queue_sql_pg": "queues.sql_pg",
    "board_index": "queues.store_index",
    "builder": "member.builder",
    "runtime": "member.runtime",
    "worker": "member.worker",
    "slot": "member.slot",
    "work": "member.work",
    "review": "member.review",
    "tools": "lead.tools",
    "extension": "lead.extension",
    "lead_state": "lead.state",
    "lead_tool_calls": "lead.tool_calls",
}
#: ``agentscope_teams.teams.rules`` is a package now; the names of the old module ``rules`` are
#: served by the package (with a warning) from here.
RULES_MODULE = "rules.transitions"


def warn_moved(old: str, new: str) -> None:
    """Warn that ``old`` is deprecated, attributed to the first frame outside the import system
    and this hook (``warnings`` itself passes over the import system's frames)."""
    level, frame = 2, sys._getframe(1)
    while frame.f_back is not None and (
        frame.f_code.co_filename == __file__
        or frame.f_globals.get("__name__") == f"{_PACKAGE}.rules"
        or _internal(frame.f_code.co_filename)
    ):
        level += 0 if _internal(frame.f_code.co_filename) else 1
        frame = frame.f_back
    warnings.warn(
        f"{old} is deprecated: import {new} instead", DeprecationWarning, stacklevel=level
    )


def _internal(filename: str) -> bool:
    return "importlib" in filename and "_bootstrap" in filename


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module at its new path."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warn_moved(spec.name, self.new)
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the new module is imported already."""


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED`."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if package != _PACKAGE or name not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(f"{_PACKAGE}.{MOVED[name]}"))


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())
