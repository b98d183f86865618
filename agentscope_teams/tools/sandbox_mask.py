"""What the agent's ``Read`` and ``Edit`` deny rules hide from a sandboxed shell command, or keep
read-only there (:class:`~agentscope_teams.sandbox.PathMask`), as Claude Code's sandboxed Bash
applies the user's permission rules at the level of the operating system.

:func:`mask_for` walks the workspace once when a command starts (no symlink followed) and asks
each directory and file what ``read_file`` (for ``Read`` rules) or an editing tool (``Edit``,
``Write``) of that path would be told (:func:`~.permissions.real_path_matches`, the matching of
:func:`~.permissions.rule_matches` for a path known to be real, so the patterns read as
everywhere else: gitignore-like, relative to the workspace, ``//abs`` and ``~/`` forms). A
directory a rule covers whole (``Read(secrets)``, ``Read(secrets/**)``:
:func:`~.permissions.covers_below`) is masked as one and not walked further; otherwise each
matching file is. A ``Read`` rule hides (an empty read-only directory, an unreadable empty
file); an ``Edit`` rule makes read-only. A symlink a rule covers (``secrets`` -> ``vault`` under
``Read(secrets/**)``), or a named path reached through a symlinked directory (``Read(link/key)``),
masks where it leads inside the workspace, as ``read_file`` denies the path as written: the
target is then masked under its own name too.

A path a rule names one by one (no wildcard: ``Read(secrets/**)``, ``Read(/.env)``,
``Read(config/.env)``, and ``Read(.env)`` at the top of the workspace:
:func:`~.permissions.named_path`) is masked even when it does not exist yet: the sandbox puts an
empty placeholder there for the command's life (:mod:`~agentscope_teams.sandbox.placeholders`),
so neither the command nor another process writing into the workspace meanwhile can make it
readable to the command, and the command cannot create it. What stays open, until the next
command (which masks what exists then):

* a file whose name only a wildcard or an any-depth name matches (``Read(*.env)``,
  ``Read(.env)`` below the top) that appears while the command runs: if the command made it,
  it holds only what the command could read anyway; if another process made it meanwhile, this
  command can read it;
* a masked path another process removes or renames over while the command runs (an editor's
  atomic save of ``.env``): Linux then detaches the mask in the sandbox, so the backend stops the
  command as soon as it learns of it (:mod:`~agentscope_teams.sandbox.tripwire`), which leaves
  only that instant;
* what a denied file's content is also stored as (``git show HEAD:.env`` reads the
  repository's copy; a hard link made before the rule existed): rules name paths, not content.

Paths outside the workspace are not masked here (the sandbox shows none of the host's but the
system's, read-only). The walk is bounded (:data:`MAX_ENTRIES`, :data:`MAX_MASKED`): beyond that
the command is refused with a :class:`~agentscope_teams.errors.ToolError` rather than run with
rules unapplied.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import ToolError
from ..sandbox.base import PathMask
from ..state import PermissionRule
from .base import Tool
from .filesystem import edit_tools, read_tool
from .permissions import covers_below, named_path, real_path_matches, rule_matches

__all__ = ["MAX_ENTRIES", "MAX_MASKED", "mask_for"]

MAX_ENTRIES = 100_000
"""Files and directories one walk of a workspace looks at, at most."""
MAX_MASKED = 2_000
"""Paths one command may have masked, at most (each is a mount)."""


class _Rules:
    """The deny rules about the path argument of one family of tools (``Read``: ``read_file``;
    ``Edit``: the editing tools), matched on the real paths of a walk."""

    def __init__(self, rules: Sequence[PermissionRule], tools: Sequence[Tool], workspace: Path):
        self.workspace = workspace
        self.rules = [
            rule
            for rule in rules
            if rule.behavior == "deny" and any(_names(rule, t, workspace) for t in tools)
        ]

    def match(self, rel: str) -> bool:
        return any(self._matches(rule, rel) for rule in self.rules)

    def whole(self, rel: str) -> bool:
        """Whether the directory ``rel`` and all below it are covered."""
        return any(
            self._matches(rule, rel) or covers_below(rule, rel, workspace=self.workspace)
            for rule in self.rules
        )

    def _matches(self, rule: PermissionRule, rel: str) -> bool:
        return real_path_matches(rule, rel, workspace=self.workspace)


def _names(rule: PermissionRule, tool: Tool, workspace: Path) -> bool:
    """Whether ``rule`` is about ``tool``'s path argument (matching the workspace itself, or with
    no pattern, tells: a rule on another tool matches nothing)."""
    if rule.argument not in (None, tool.primary_argument):
        return False
    probe = PermissionRule(tool=rule.tool, behavior=rule.behavior, argument=rule.argument)
    return rule_matches(probe, tool, {tool.primary_argument or "path": "."}, workspace=workspace)


def mask_for(rules: Sequence[PermissionRule], workspace: Path) -> PathMask:
    """The :class:`PathMask` of ``rules`` in ``workspace`` now (module docstring); empty when no
    ``Read`` or ``Edit`` deny rule exists, without walking."""
    hide = _Rules(rules, (read_tool(),), workspace)
    keep = _Rules(rules, edit_tools(), workspace)
    if not hide.rules and not keep.rules:
        return PathMask()
    hidden: list[str] = []
    read_only: list[str] = []
    stack: list[tuple[str, bool]] = [(".", False)]  # (path relative to the workspace, read-only)
    seen = 0
    while stack:
        rel, frozen = stack.pop()
        where = os.fspath(workspace) if rel == "." else os.path.join(workspace, rel)
        if hide.whole(rel):
            hidden.append(where)
            continue
        if not frozen and keep.whole(rel):
            read_only.append(where)
            frozen = True
        if not hide.rules and frozen:
            continue  # nothing below can be hidden, and all of it is read-only already
        for entry in _entries(where):
            seen += 1
            path = entry.name if rel == "." else f"{rel}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                stack.append((path, frozen))
            elif entry.is_symlink():  # a denied name leading elsewhere: mask where it leads
                target = _target(workspace, entry.path)
                if target is not None and (hide.whole(path) or hide.match(path)):
                    hidden.append(target)
                elif target is not None and not frozen and (keep.whole(path) or keep.match(path)):
                    read_only.append(target)
            elif not entry.is_file(follow_symlinks=False):
                continue
            elif hide.match(path):
                hidden.append(entry.path)
            elif not frozen and keep.match(path):
                read_only.append(entry.path)
        _check_bounds(workspace, seen, len(hidden) + len(read_only))
    directories: list[str] = []
    for found, family in ((hidden, hide), (read_only, keep)):
        for path, directory in _named(family, workspace):
            found.append(path)
            if directory:
                directories.append(path)
    hidden = _outermost(hidden)
    read_only = [p for p in dict.fromkeys(read_only) if not _below(p, hidden)]
    return PathMask(
        hidden=tuple(hidden),
        read_only=tuple(read_only),
        directories=tuple(d for d in directories if d in hidden or d in read_only),
    )


def _target(workspace: Path, path: str) -> str | None:
    """Where the symlink ``path`` leads, if that exists inside ``workspace`` (elsewhere the
    sandbox shows nothing of the host's but the system, read-only)."""
    target = os.path.realpath(path)
    root = os.fspath(workspace)
    inside = target == root or target.startswith(root.rstrip("/") + "/")
    return target if inside and os.path.exists(target) else None


def _named(rules: _Rules, workspace: Path) -> list[tuple[str, bool]]:
    """What the paths ``rules`` name one by one (:func:`~.permissions.named_path`) need masked
    beyond the walk: one that does not exist yet (it gets a placeholder), or where one reached
    through a symlinked directory leads (``secrets/key`` with ``secrets`` -> ``vault``).
    (absolute path, names a directory)."""
    found: dict[str, bool] = {}
    for rule in rules.rules:
        named = named_path(rule, workspace=workspace)
        if named is None:
            continue
        path = os.path.join(workspace, named[0])
        if not os.path.lexists(path):
            found[path] = found.get(path, False) or named[1]
        elif os.path.realpath(path) != path and (target := _target(workspace, path)):
            found[target] = found.get(target, False) or named[1]
    return list(found.items())


def _below(path: str, directories: Sequence[str]) -> bool:
    return any(path.startswith(d.rstrip("/") + "/") for d in directories)


def _outermost(paths: Sequence[str]) -> list[str]:
    """``paths`` without repeats nor those below another (inside a hidden directory, nothing
    more needs hiding, and a mount point there could not be made)."""
    unique = list(dict.fromkeys(paths))
    return [p for p in unique if not _below(p, unique)]


def _entries(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as found:
            return list(found)
    except OSError:
        return []  # gone or unreadable by the service: the sandbox cannot show it either


def _check_bounds(workspace: Path, seen: int, masked: int) -> None:
    if seen > MAX_ENTRIES:
        raise ToolError(
            f"the workspace {workspace} holds more than {MAX_ENTRIES} files and directories, too "
            "many to check against the Read and Edit deny rules before the command runs, so it "
            "was not run; deny whole directories (Read(secrets/)), which are not walked, or "
            "remove files from the workspace"
        )
    if masked > MAX_MASKED:
        raise ToolError(
            f"the Read and Edit deny rules cover more than {MAX_MASKED} separate files of the "
            f"workspace {workspace}, too many to hide from the command, so it was not run; deny "
            "the directories holding them instead (Read(secrets/))"
        )
