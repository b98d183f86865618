"""``isolation: worktree``: a run works in a git worktree of the parent's repository.

The parent's workspace must be inside a git repository (otherwise the spawn is a tool error). The
run's directory (:func:`~.workspace.run_dir`) becomes a ``git worktree`` of that repository, made from
its ``HEAD`` on a new branch ``agent/<spec>-<run id>``, and the child works there. When the run ends
(completed, failed or cancelled) :func:`finish` looks at it: with no change (a clean status and no new
commit) the worktree is removed and the branch deleted; otherwise nothing is committed for the user,
both are kept and the run's result names them. The agent memory folder (:mod:`.memory`) does not
count as a change. When the worktree lies inside the repository's own checkout, the run directories'
root (``.subagents/``) is added to the repository's ``info/exclude`` so the main checkout stays clean.

A crashed process leaves its worktree behind: the janitor (:func:`~.workspace.janitor`) calls
:func:`discard_orphan`, which applies the same rule and then runs ``git worktree prune``.

git runs as a subprocess (never through a shell) with a timeout of :data:`GIT_TIMEOUT` seconds.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.streams.text import TextReceiveStream

from ..errors import GitError
from .memory import MEMORY_DIR

log = logging.getLogger(__name__)

GIT_TIMEOUT = 60.0
#: A file in the worktree's administrative directory (inside ``.git``, never in the checkout)
#: holding the commit the worktree started from.
BASE_FILE = "agentscope-base"
#: Changes under this path are not the run's work (the memory folder is synced to the store).
_NOT_WORK = f":(exclude){MEMORY_DIR.as_posix()}"


async def git(cwd: Path, *args: str) -> str:
    """Run ``git -C cwd args...``; its stdout, or :class:`GitError` (non-zero exit, or more
    than :data:`GIT_TIMEOUT` seconds)."""
    timeout = GIT_TIMEOUT
    command = ["git", "-C", str(cwd), *args]
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # never wait for a password
    process = await anyio.open_process(command, stdin=subprocess.DEVNULL, env=env)
    out: list[str] = []
    err: list[str] = []

    async def drain(stream: anyio.abc.ByteReceiveStream | None, into: list[str]) -> None:
        if stream is not None:
            async for chunk in TextReceiveStream(stream, errors="replace"):
                into.append(chunk)

    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain, process.stdout, out)
                tg.start_soon(drain, process.stderr, err)
            code = await process.wait()
    except TimeoutError:
        raise GitError(f"`git {' '.join(args)}` in {cwd} took more than {timeout:g}s") from None
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()
        await process.aclose()
    if code != 0:
        message = "".join(err).strip() or f"exit status {code}"
        raise GitError(f"`git {' '.join(args)}` in {cwd} failed: {message}")
    return "".join(out)


async def repository_of(path: Path) -> Path | None:
    """The top directory of the git checkout holding ``path`` (None: not in a git repository).

    A ``path`` not made yet (a session's workspace before its first file) is looked up from its
    nearest existing parent.
    """
    path = next((p for p in (path, *path.parents) if p.is_dir()), path)
    try:
        return Path((await git(path, "rev-parse", "--show-toplevel")).strip())
    except GitError:
        return None


async def has_commit(repo: Path) -> bool:
    """Whether ``repo``'s HEAD names a commit (a repository just made with ``git init`` has
    none to branch from)."""
    try:
        await git(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except GitError:
        return False
    return True


def branch_name(spec: str, run_id: str) -> str:
    """``agent/<spec>-<run id>``, with the characters git refuses in a branch name replaced."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", spec).strip("-") or "agent"
    return f"agent/{safe}-{run_id.removeprefix('r-')}"


@dataclass(frozen=True)
class Worktree:
    """A run's worktree: its ``path``, its ``branch`` and the ``repo`` checkout it was made from."""

    repo: Path
    path: Path
    branch: str

    def kept_note(self) -> str:
        return (
            f"[isolation: worktree] the changes are on branch {self.branch} in worktree "
            f"{self.path} (nothing was committed for you; merge or delete the branch, then "
            f"`git worktree remove {self.path}`)"
        )


async def create(repo: Path, path: Path, branch: str) -> Worktree:
    """A new worktree of ``repo`` at ``path`` on a new ``branch`` made from ``repo``'s HEAD.

    A ``path`` that is already a worktree (a labelled run continuing) is used as it is.
    """
    if (path / ".git").is_file():
        current = (await git(path, "rev-parse", "--abbrev-ref", "HEAD")).strip()
        return Worktree(repo, path, current)
    await git(repo, "worktree", "add", "-b", branch, str(path), "HEAD")
    base = (await git(path, "rev-parse", "HEAD")).strip()
    admin = Path((await git(path, "rev-parse", "--absolute-git-dir")).strip())
    await anyio.Path(admin / BASE_FILE).write_text(base + "\n")
    await _exclude_run_dirs(repo, path)
    return Worktree(repo, path, branch)


async def _exclude_run_dirs(repo: Path, path: Path) -> None:
    """Keep ``.subagents/`` out of the main checkout's status when the worktree lies inside it."""
    from .workspace import SUBAGENTS_DIR

    top = next((p for p in path.parents if p.name == SUBAGENTS_DIR), None)
    if top is None or not top.is_relative_to(repo):
        return
    line = "/" + top.relative_to(repo).as_posix() + "/"
    common = Path(
        (await git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")).strip()
    )
    exclude = anyio.Path(common / "info" / "exclude")
    text = await exclude.read_text() if await exclude.exists() else ""
    if line not in text.splitlines():
        await exclude.parent.mkdir(parents=True, exist_ok=True)
        await exclude.write_text(
            text + ("" if not text or text.endswith("\n") else "\n") + line + "\n"
        )


async def has_changes(path: Path) -> bool:
    """Whether the worktree at ``path`` has uncommitted changes or commits after its start."""
    status = await git(path, "status", "--porcelain", "--untracked-files=all", "--", ".", _NOT_WORK)
    if status.strip():
        return True
    admin = Path((await git(path, "rev-parse", "--absolute-git-dir")).strip())
    try:
        base = (await anyio.Path(admin / BASE_FILE).read_text()).strip()
    except OSError:
        return True  # not made here, or its start is unknown: keep it
    head = (await git(path, "rev-parse", "HEAD")).strip()
    return head != base


async def finish(tree: Worktree) -> str | None:
    """Remove a worktree without changes (and its branch); otherwise keep both and return a note."""
    if await has_changes(tree.path):
        return tree.kept_note()
    await git(tree.repo, "worktree", "remove", "--force", str(tree.path))
    await git(tree.repo, "branch", "-D", tree.branch)
    return None


async def discard_orphan(path: Path) -> bool:
    """The janitor's part for a worktree whose run is over: :func:`finish` it, then prune the
    repository's worktree list. True when it was removed."""
    try:
        pointer = (await anyio.Path(path / ".git").read_text()).strip()
        admin = Path(pointer.removeprefix("gitdir:").strip())
        common = Path((await anyio.Path(admin / "commondir").read_text()).strip())
        common = common if common.is_absolute() else (admin / common).resolve()
        repo = common.parent  # the main checkout (``<repo>/.git``)
        branch = (await git(path, "rev-parse", "--abbrev-ref", "HEAD")).strip()
        note = await finish(Worktree(repo, path, branch))
        await git(repo, "worktree", "prune")
    except (OSError, GitError) as exc:
        log.warning("janitor kept worktree %s: %s", path, exc)
        return False
    if note is not None:
        log.info("janitor kept worktree %s: it has changes on branch %s", path, branch)
        return False
    return True


def is_worktree(path: Path) -> bool:
    """Whether ``path`` is a linked git worktree (its ``.git`` is a file)."""
    return (path / ".git").is_file()
