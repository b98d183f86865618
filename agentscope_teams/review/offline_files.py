"""How the offline lead finds the files to review: ``glob_files``, split up when the listing is cut.

``glob_files`` lists at most 1000 paths. When the listing of a directory is cut ("... N more files"),
:func:`discover` lists the directory with ``list_files`` and globs each of its subdirectories
separately (skipping hidden directories, virtualenvs and ``site-packages``), level by level, until
every listing is whole. It works from the calls already made and their results, like the rest of
the offline model.
"""

from __future__ import annotations

from collections.abc import Sequence

from .analyzer import SKIP_DIRS
from .transcript import Call, glob_paths

PATTERN = "**/*.py"
Plan = list[tuple[str, dict[str, object]]]


def skipped_dir(name: str) -> bool:
    """A directory that is not part of the project's own code."""
    return name.startswith(".") or name in SKIP_DIRS or name.endswith("-packages")


def reviewable(path: str) -> bool:
    """A Python file of the project: not in a hidden directory, a virtualenv or site-packages."""
    *dirs, name = path.split("/")
    return name.endswith(".py") and not any(skipped_dir(d) for d in dirs)


def _cut(output: str) -> bool:
    return any(
        line.startswith("... ") and line.endswith(" more files") for line in output.splitlines()
    )


def _by_path(calls: Sequence[Call], name: str) -> dict[str, Call]:
    return {(c.arg("path") or "."): c for c in calls if c.name == name and c.output is not None}


def discover(calls: Sequence[Call]) -> tuple[list[str], Plan, str | None]:
    """(files found so far, the calls still needed, the error if the root could not be listed)."""
    globs, lists = _by_path(calls, "glob_files"), _by_path(calls, "list_files")
    files: list[str] = []
    plan: Plan = []

    def visit(path: str) -> None:
        found = globs.get(path)
        if found is None:
            args: dict[str, object] = {"pattern": PATTERN}
            plan.append(("glob_files", args if path == "." else {**args, "path": path}))
            return
        paths = glob_paths(found.output or "") if found.ok else []
        listing = lists.get(path)
        if not found.ok or not _cut(found.output or "") or (listing and not listing.ok):
            files.extend(p for p in paths if reviewable(p))
            return
        if listing is None:
            plan.append(("list_files", {"path": path}))
            return
        for entry in glob_paths(listing.output or ""):
            if entry.endswith("/") and not skipped_dir(entry.rstrip("/").rsplit("/", 1)[-1]):
                visit(entry.rstrip("/"))
            elif reviewable(entry):
                files.append(entry)

    visit(".")
    root = globs.get(".")
    error = root.output if root is not None and root.is_error else None
    return sorted(set(files)), plan, error
