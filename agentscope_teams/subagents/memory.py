"""``memory: user | project | local``: a subagent's persistent memory, kept in the store.

Claude Code keeps a subagent's memory in a folder on one machine. Here agents are stateless and may
run on any host (team workers), so the memory lives in the STORE, one entry per (org, user, scope,
agent) (the ``agent-memory`` key family, :mod:`agentscope_teams.keys`): two users never share one,
and ids are key segments, never paths. The scopes:

* ``user``: one memory for the agent across every project of the user;
* ``project``: one per project, the project being the directory the subagent runs are rooted in
  (the top agent's workspace, or ``workspace_root``), identified by a hash of its resolved path;
* ``local``: per project and per machine (the hash also covers the host name): notes about this
  checkout on this host, which a worker on another machine does not see (Claude Code's ``local``
  memory is the one not checked into version control).

At the start of a run :meth:`AgentMemory.open` writes the stored files into
``.claude/agent-memory/<agent>/`` inside the run's workspace (the file tools work on it, confined as
usual), and the child's system prompt gets the first :data:`PROMPT_LINES` lines of its ``MEMORY.md``
(with a note when cut) and where the folder is. When the run ends (however it ends)
:meth:`AgentMemory.sync` writes the folder back with ``expected_version``: if another run wrote the
memory meanwhile, the changes are merged file by file; a file both changed keeps the other writer's
version and this run's is saved next to it (``<name>.conflict-<run>.<ext>``) with a line in
``MEMORY.md`` saying so, so no write is lost. At most :data:`MAX_FILES` files and :data:`MAX_BYTES`
bytes are kept; what does not fit (or is not UTF-8 text, or is a symlink) is not saved, and the run's
result says which files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath

import anyio

from ..agent.extension import CallScope, Extension
from ..context import RuntimeContext
from ..errors import VersionConflict
from ..keys import agent_memory_key
from ..store.base import BaseStore, Key

MEMORY_DIR = PurePosixPath(".claude/agent-memory")
INDEX = "MEMORY.md"
PROMPT_LINES = 200
MAX_FILES = 25
MAX_BYTES = 200_000
_SYNC_ATTEMPTS = 20


class MemoryScope(StrEnum):
    """Which memory a spec's ``memory:`` selects (see the module docs)."""

    USER = "user"
    PROJECT = "project"
    LOCAL = "local"


def scope_segment(scope: MemoryScope, project_root: Path) -> str:
    """The key segment naming one memory of a user's agent: ``user``, ``project:<hash>`` or
    ``local:<hash>`` (of the project's resolved path, plus the host name for ``local``)."""
    if scope is MemoryScope.USER:
        return "user"
    ident = str(project_root.resolve())
    if scope is MemoryScope.LOCAL:
        ident += "\0" + socket.gethostname()
    return f"{scope.value}:{hashlib.sha256(ident.encode()).hexdigest()[:24]}"


@dataclass
class Snapshot:
    """The stored files (relative POSIX path -> text) and the entry's version (0: none yet)."""

    files: dict[str, str] = field(default_factory=dict)
    version: int = 0


def _safe(name: str) -> bool:
    path = PurePosixPath(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts and "\\" not in name


def read_folder(folder: Path) -> tuple[dict[str, str], list[str]]:
    """The folder's files within the bounds, and notes on those refused (sorted, so stable)."""
    found: dict[str, str] = {}
    refused: list[str] = []
    total = 0
    if not folder.is_dir() or folder.is_symlink():
        return found, refused
    names: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
        base = Path(dirpath)
        names += [(base / f).relative_to(folder).as_posix() for f in filenames]
    for name in sorted(names, key=lambda n: (n != INDEX, n)):  # MEMORY.md first
        path = folder / name
        if path.is_symlink() or not path.is_file():
            refused.append(f"{name} (not a regular file)")
            continue
        data = path.read_bytes()
        if len(found) >= MAX_FILES:
            refused.append(f"{name} (more than {MAX_FILES} files)")
            continue
        if total + len(data) > MAX_BYTES:
            refused.append(f"{name} (the memory would exceed {MAX_BYTES // 1000} KB)")
            continue
        try:
            found[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            refused.append(f"{name} (not UTF-8 text)")
            continue
        total += len(data)
    return found, refused


def write_folder(folder: Path, workspace: Path, files: dict[str, str]) -> None:
    """Make ``folder`` hold exactly ``files`` (names that would leave it are skipped).

    Refuses (``ValueError``) a folder that resolves outside ``workspace`` (a symlinked
    ``.claude`` left in a shared workspace): it is written outside the file tools' confinement.
    """
    if folder.is_symlink():
        folder.unlink()
    top = workspace.resolve()
    if not folder.parent.resolve().is_relative_to(top):
        raise ValueError(f"the memory folder {folder} leads outside the workspace {top}")
    if folder.is_dir():
        shutil.rmtree(folder)  # symlinks inside are removed, never followed
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        if _safe(name):
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def conflict_name(name: str, tag: str) -> str:
    path = PurePosixPath(name)
    return str(path.with_name(f"{path.stem}.conflict-{tag}{path.suffix}"))


def merge(
    base: dict[str, str], theirs: dict[str, str], ours: dict[str, str], tag: str
) -> tuple[dict[str, str], list[str]]:
    """Apply this run's changes (``base`` -> ``ours``) to what another writer stored (``theirs``).

    Returns the merged files and the names both changed: those keep ``theirs`` and this run's
    version is kept as :func:`conflict_name`; a line in ``MEMORY.md`` says so.
    """
    merged = dict(theirs)
    conflicts: list[str] = []
    for name in sorted(set(base) | set(ours)):
        b, o, t = base.get(name), ours.get(name), theirs.get(name)
        if o in (b, t):
            continue  # untouched by this run, or both made the same change
        if t == b:  # only this run changed it
            if o is None:
                merged.pop(name, None)
            else:
                merged[name] = o
            continue
        conflicts.append(name)
        if o is not None:
            merged[conflict_name(name, tag)] = o
    if conflicts:
        lines = [
            f"- Memory conflict (run {tag}): another run changed {name} at the same time; its "
            f"version is kept, this run's is in {conflict_name(name, tag)} (or it was deleted). "
            "Reconcile them."
            for name in conflicts
        ]
        index = merged.get(INDEX, "")
        merged[INDEX] = (
            index + ("\n" if index and not index.endswith("\n") else "") + "\n".join(lines) + "\n"
        )
    return merged, conflicts


class AgentMemory:
    """One agent's memory of one scope, for one run: the store entry and the run's folder."""

    def __init__(
        self,
        store: BaseStore,
        ctx: RuntimeContext,
        agent: str,
        scope: MemoryScope,
        project_root: Path,
        workspace: Path,
    ) -> None:
        self.store, self.agent, self.scope = store, agent, scope
        self.key: Key = agent_memory_key(
            ctx.org_id, ctx.user_id, scope_segment(scope, project_root), agent
        )
        self.relative = MEMORY_DIR / agent
        self.workspace = workspace
        self.folder = workspace / self.relative
        self.base = Snapshot()

    async def load(self) -> Snapshot:
        entry = await self.store.get(self.key)
        if entry is None:
            return Snapshot()
        files = json.loads(entry.value)["files"]
        return Snapshot({n: t for n, t in files.items() if _safe(n)}, entry.version)

    async def open(self) -> MemoryPrompt:
        """Write the stored memory into the run's folder; the child's system prompt part."""
        self.base = await self.load()
        await anyio.to_thread.run_sync(write_folder, self.folder, self.workspace, self.base.files)
        return MemoryPrompt(self.prompt(self.base.files))

    def prompt(self, files: dict[str, str]) -> str:
        where = self.relative.as_posix()
        lines = files.get(INDEX, "").splitlines()
        head = (
            f"## Agent memory\nYou have a persistent memory folder, `{where}/` in your workspace "
            f"({self.scope.value} scope), kept between your runs. Read it and update it with your "
            f"file tools as you learn things worth keeping. Keep `{where}/{INDEX}` a short index "
            f"(only its first {PROMPT_LINES} lines are shown to you when a run starts) and put "
            f"details in other files of that folder. At most {MAX_FILES} files and "
            f"{MAX_BYTES // 1000} KB are kept."
        )
        if not lines:
            return head + f"\n\n{INDEX} is empty: this is your first run with this memory."
        shown = "\n".join(lines[:PROMPT_LINES])
        cut = len(lines) - PROMPT_LINES
        note = (
            f"\n[{cut} more lines of {INDEX} are not shown: read the file, and move details "
            "out of the index]"
            if cut > 0
            else ""
        )
        return f"{head}\n\nContents of {INDEX}:\n{shown}{note}"

    async def sync(self, tag: str) -> str | None:
        """Write the folder back to the store (merging with writes made since :meth:`open`); a
        note for the run's result when files were refused or merged with conflicts."""
        if not self.folder.is_dir() or self.folder.is_symlink():
            return f"[agent memory] {self.relative.as_posix()}/ is gone: nothing was saved"
        ours, refused = await anyio.to_thread.run_sync(read_folder, self.folder)
        conflicts: list[str] = []
        lost: VersionConflict | None = None
        if ours != self.base.files:
            for _ in range(_SYNC_ATTEMPTS):
                current = await self.load()
                if current.version == self.base.version:
                    merged, conflicts = ours, []
                else:
                    merged, conflicts = merge(self.base.files, current.files, ours, tag)
                value = json.dumps({"files": merged}, ensure_ascii=False).encode()
                try:
                    version = await self.store.put(
                        self.key, value, expected_version=current.version
                    )
                except VersionConflict as exc:
                    lost = exc
                    continue
                self.base, lost = Snapshot(merged, version), None
                break
            if lost is not None:
                raise lost
        notes = []
        if refused:
            notes.append(f"not saved: {', '.join(refused)}")
        if conflicts:
            notes.append(
                f"another run changed {', '.join(conflicts)} meanwhile: both versions are kept "
                f"(see {INDEX})"
            )
        return f"[agent memory] {'; '.join(notes)}" if notes else None


class MemoryPrompt(Extension):
    """The memory part of a child's system prompt (read when its run started)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def system_prompt(self, scope: CallScope) -> str:
        return self.text
