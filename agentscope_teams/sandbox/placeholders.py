"""Empty placeholders over the paths a :class:`~.base.PathMask` names that do not exist yet.

A mask is a set of mounts over paths of the workspace, and a mount needs a file or directory to
sit on. A ``Read(secrets/**)`` rule whose ``secrets`` does not exist when the command starts, or a
``Read(/.env)`` rule with no ``.env`` yet, would otherwise mask nothing: the command (or another
process writing into the workspace meanwhile) could create ``secrets/key`` or ``.env`` and the
command read it. :func:`acquire` makes an empty directory (for a directory pattern) or an empty
file (mode 0600) at each missing path, and its missing parents, before the sandbox starts, so the
mask covers it for the whole command: inside the sandbox the path cannot be created or written
(a hidden one is unreadable), and what another process writes there meanwhile lands under the
mount, out of the command's sight. :func:`release` removes, once the last command of this
process using it has ended, each placeholder still empty (a file another process wrote into, a
directory it filled, is kept).

While a command runs, other processes of the host see the placeholder (an empty ``.env``, an
empty ``secrets/``). A placeholder is only made below an existing real directory of the
workspace, never through a symlink.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

__all__ = ["acquire", "release"]

_lock = threading.Lock()
_users: dict[str, int] = {}  # placeholder path -> commands of this process using it
_made: dict[str, list[str]] = {}  # placeholder path -> the paths made for it, outermost first


def acquire(paths: Iterable[str], directories: Iterable[str], workspace: str) -> list[str]:
    """Make a placeholder at each of ``paths`` (absolute, inside ``workspace``) that does not
    exist: a directory if it is in ``directories``, else an empty file. Returns the paths now
    held, to pass to :func:`release` when the command has ended."""
    dirs = set(directories)
    held: list[str] = []
    with _lock:
        for path in dict.fromkeys(paths):
            if path in _users:
                _users[path] += 1
                held.append(path)
            elif not os.path.lexists(path):
                made = _make(path, path in dirs, workspace)
                if made:
                    _users[path] = 1
                    _made[path] = made
                    held.append(path)
    return held


def release(held: Iterable[str]) -> None:
    """Give back what :func:`acquire` returned; remove each placeholder no command uses now,
    and the parents made for it, if they are still empty."""
    with _lock:
        for path in held:
            _users[path] -= 1
            if _users[path] > 0:
                continue
            del _users[path]
            for made in reversed(_made.pop(path)):
                _remove_if_empty(made)


def _make(path: str, directory: bool, workspace: str) -> list[str]:
    """The paths made for a placeholder at ``path`` (outermost first), or [] if it cannot be
    made safely: only below a real directory of ``workspace``, reached without a symlink."""
    missing: list[str] = []
    parent = path
    while not os.path.lexists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    root = workspace.rstrip("/")
    inside = parent == root or parent.startswith(root + "/")
    if not inside or os.path.realpath(parent) != parent or not os.path.isdir(parent):
        return []
    made: list[str] = []
    try:
        for step in reversed(missing):
            if step != path or directory:
                os.mkdir(step, 0o700)
            else:
                os.close(os.open(step, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
            made.append(step)
    except OSError:  # created meanwhile by someone else, or not creatable: mask what is there
        for step in reversed(made):
            _remove_if_empty(step)
        return []
    return made


def _remove_if_empty(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)  # fails, and keeps it, if anything was put in it
        elif os.lstat(path).st_size == 0:
            os.unlink(path)
    except OSError:
        pass
