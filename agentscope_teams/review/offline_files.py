"""How the offline lead finds the files to review: ``glob_files``, split up when the listing is cut.

``glob_files`` lists at most 1000 paths. When the listing of a directory is cut ("... N more files"),
:func:`discover` lists the directory with ``list_files`` and globs each of its subdirectories
separately (skipping hidden directories, virtualenvs and ``site-packages``), level by level, until
every listing is whole. It works from the calls already made and their results, like the rest of
the offline model.

For ``agentscope-teams review PATH --changed-since REF`` the instruction names the ref and the
repository (:class:`ChangeScope`): :func:`discover_changed` asks the git MCP server for
``git_diff`` against the ref and keeps the Python files the diff shows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

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


# -- reviewing only what changed (``review --changed-since REF``, through the git MCP server) ------

GIT_DIFF = "mcp__git__git_diff"
_LINE = re.compile(r"^(?P<key>changed since|repository|target in repository):\s*(?P<v>.+?)\s*$")


@dataclass(frozen=True)
class ChangeScope:
    """What the instruction of a ``--changed-since`` review says: the ref, the repository root
    and where the reviewed directory is inside it (``.`` for the root)."""

    since: str
    repository: str
    prefix: str

    @classmethod
    def of(cls, instruction: str) -> ChangeScope | None:
        found: dict[str, str] = {}
        for line in instruction.splitlines():
            m = _LINE.match(line.strip().lower())
            if m is not None:
                raw = line.split(":", 1)[1].strip()
                found[m["key"]] = raw.strip("`")
        if "changed since" not in found or "repository" not in found:
            return None
        prefix = found.get("target in repository", ".").strip("/") or "."
        return cls(found["changed since"], found["repository"], prefix)

    def diff_call(self) -> tuple[str, dict[str, object]]:
        args: dict[str, object] = {
            "repo_path": self.repository,
            "target": self.since,
            "context_lines": 0,
        }
        return GIT_DIFF, args

    def files(self, diff: str) -> list[str]:
        """The reviewable Python files the diff shows as present after the change, relative to
        the reviewed directory (the lead's workspace)."""
        found: list[str] = []
        for line in diff.splitlines():
            if not line.startswith("+++ b/"):
                continue  # `+++ /dev/null`: the file was deleted
            path = line[len("+++ b/") :].strip()
            if self.prefix != ".":
                if not path.startswith(self.prefix + "/"):
                    continue
                path = path[len(self.prefix) + 1 :]
            if reviewable(path):
                found.append(path)
        return sorted(set(found))


def discover_changed(
    scope: ChangeScope, calls: Sequence[Call]
) -> tuple[list[str], Plan, str | None]:
    """Like :func:`discover`, from one ``git_diff`` call of the git MCP server."""
    done = [c for c in calls if c.name == GIT_DIFF and c.output is not None]
    if not done:
        return [], [scope.diff_call()], None
    last = done[-1]
    if last.is_error:
        return [], [], last.output
    return scope.files(last.output or ""), [], None
