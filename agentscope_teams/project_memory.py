"""A project's instructions, as Claude Code reads them: ``CLAUDE.md`` and the files it imports.

Claude Code gives every session (and subagent) the project's memory files. :meth:`ProjectMemory.load`
finds them the same way, for one project folder:

* the user's ``~/.claude/CLAUDE.md`` (with ``user=``), first;
* with ``parents=True``, ``CLAUDE.md``, ``.claude/CLAUDE.md`` and ``CLAUDE.local.md`` of every
  folder above the project, up to but not including ``/``, the outermost first;
* the project's own ``CLAUDE.md``, ``.claude/CLAUDE.md`` and ``CLAUDE.local.md``, last (the most
  specific instructions come last).

A file imports another with ``@path`` (at the start of a line or after a space): relative to the
importing file, absolute, or ``~/...``; not inside a code span or a fenced code block; up to 5
hops deep. Each file read appears once, under a heading naming it, its imports after it.

Where Claude Code is quiet, this says what happened (:attr:`ProjectMemory.notices`): an import
that names no file, an import cycle, an import deeper than 5 hops, a file cut at the size bound
(:data:`MAX_CHARS` for all the memory together), a file that cannot be read. An import of a
project file that leaves the project (``@~/notes.md``, ``@../../x``, or a symlink out of it; a
memory file that is such a symlink too) is read only when the project is trusted
(:mod:`agentscope_teams.trust`: Claude Code asks before it follows such an import); otherwise it
is withheld and named in :meth:`ProjectTrust.notice`. The project's own text is not gated by
trust: it is text, like the bodies of the project's agent files, which are the subagents'
prompts.

:class:`ProjectMemory` is also the extension that puts the text into an agent's system prompt;
:class:`~agentscope_teams.HarnessAgent` (``project_memory=``) gives it to its subagents too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .agent.extension import CallScope, Extension
from .errors import ConfigurationError
from .trust import ENABLE_HINT, ProjectTrust, project_root

__all__ = [
    "MAX_CHARS",
    "MAX_HOPS",
    "MEMORY_FILES",
    "MemoryFile",
    "ProjectMemory",
    "claude_project",
    "imports",
]

#: The memory files of one folder, in the order they are read.
MEMORY_FILES = ("CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
#: How deep imports go (Claude Code: 5 hops).
MAX_HOPS = 5
#: The bound on the whole memory text, in characters; a file that would pass it is cut.
MAX_CHARS = 100_000

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SPAN = re.compile(r"(`+).*?\1")
_IMPORT = re.compile(r"(?:^|(?<=\s))@([^\s`@]+)")
_TRAILING = ".,;:!?)]'\""


@dataclass(frozen=True)
class MemoryFile:
    """One memory file read: where, what kind (``user``, ``project``, ``local``, ``parent``,
    ``import``) and its text."""

    path: Path
    kind: str
    text: str


@dataclass(eq=False)
class ProjectMemory(Extension):
    """The memory files of a project (see the module docs), and the system prompt part they make."""

    files: list[MemoryFile] = field(default_factory=list)
    #: What went wrong or was cut, one line each (a command prints them as notes).
    notices: list[str] = field(default_factory=list)

    @classmethod
    def from_text(cls, text: str, *, name: str = "project instructions") -> ProjectMemory:
        """Memory given as text (no file, no imports)."""
        return cls([MemoryFile(Path(name), "given", text)] if text.strip() else [])

    @classmethod
    def load(
        cls,
        project: Path | str,
        *,
        parents: bool = False,
        user: Path | str | None = None,
        trust: ProjectTrust | None = None,
    ) -> ProjectMemory:
        """The memory of the project folder ``project`` (or of one memory file, with its
        imports). ``parents`` also reads the folders above it (as Claude Code does from its
        working directory); ``user`` is the folder of the user's own ``CLAUDE.md`` (usually
        ``~/.claude``); ``trust`` decides imports leaving the project (default: the user's
        trust file). A folder or file that does not exist is a ConfigurationError."""
        start = Path(project).expanduser()
        if not start.exists():
            raise ConfigurationError(
                f"project memory {str(start)[:200]!r}: no such file or folder; pass the "
                "project's folder (holding CLAUDE.md) or a memory file, or for instructions "
                "given as text, ProjectMemory.from_text(text)"
            )
        root = start.resolve() if start.is_dir() else start.resolve().parent
        reader = _Reader(trust if trust is not None else ProjectTrust(), root)
        if user is not None:
            reader.top(Path(user).expanduser() / "CLAUDE.md", "user", bound=None)
        if start.is_file():
            reader.top(start, "project", bound=root)
            return cls(reader.files, reader.notices)
        folders = list(reversed(root.parents[:-1])) if parents else []
        for folder in [*folders, root]:
            for name in MEMORY_FILES:
                kind = "local" if name == "CLAUDE.local.md" else "project"
                reader.top(folder / name, kind if folder == root else "parent", bound=folder)
        return cls(reader.files, reader.notices)

    def text(self) -> str:
        """The memory as one text: each file under a heading naming it."""
        if not self.files:
            return ""
        parts = [
            f"Contents of {f.path} ({_KINDS[f.kind]}):\n\n{f.text.strip()}" for f in self.files
        ]
        return (
            "## Project instructions (CLAUDE.md)\nThe instructions below come from the memory "
            "files of the project and the user. Follow them.\n\n" + "\n\n".join(parts)
        )

    def __bool__(self) -> bool:
        return bool(self.files)

    def system_prompt(self, scope: CallScope) -> str:
        return self.text()


_KINDS = {
    "user": "the user's instructions for all projects",
    "project": "the project's instructions",
    "local": "the user's own instructions for this project",
    "parent": "instructions of a folder above the project",
    "import": "imported",
    "given": "given by the operator",
}


def claude_project(specs: object) -> Path | None:
    """The project root when ``specs`` is a Claude Code project's ``.claude/agents`` folder."""
    if not isinstance(specs, str | Path):
        return None
    folder = Path(specs).expanduser().resolve()
    if folder.is_dir() and folder.name == "agents" and folder.parent.name == ".claude":
        return project_root(folder)
    return None


class _Reader:
    """Reads memory files and their imports, once each, within :data:`MAX_CHARS`."""

    def __init__(self, trust: ProjectTrust, project: Path) -> None:
        self.trust, self.project = trust, project
        self.files: list[MemoryFile] = []
        self.notices: list[str] = []
        self.seen: set[Path] = set()
        self.size = 0

    def top(self, path: Path, kind: str, *, bound: Path | None) -> None:
        """A memory file (skipped quietly when it does not exist) and its imports. ``bound`` is
        the folder its imports stay in unless the project is trusted (None: the user's own
        file, not bounded)."""
        if not path.is_file():
            return
        real = path.resolve()
        if bound is not None and not real.is_relative_to(bound) and not self._trusted():
            self.trust.withhold("memory file", path.name, path)  # a symlink leading out
            self.notices.append(
                f"memory file {path} leads to {real}, outside {bound}, and the project "
                f"{self.project} is not trusted, so it was not read; to read it, "
                + ENABLE_HINT.format(root=self.project)
            )
            return
        self._read(path, kind, bound, chain=[])

    def _read(self, path: Path, kind: str, root: Path | None, chain: list[Path]) -> None:
        real = path.resolve()
        if real in self.seen:
            return
        self.seen.add(real)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = (
                "it is not UTF-8 text; save it as UTF-8"
                if isinstance(exc, UnicodeDecodeError)
                else exc.strerror or exc
            )
            self.notices.append(f"memory file {path} not read: {reason}")
            return
        room = MAX_CHARS - self.size
        if room <= 0:
            self.notices.append(
                f"memory file {path} not read: the project's memory is at its bound of "
                f"{MAX_CHARS} characters; shorten the files read before it"
            )
            return
        if len(text) > room:
            self.notices.append(
                f"memory file {path} cut to {room} of its {len(text)} characters: the "
                f"project's memory is bounded to {MAX_CHARS} characters; shorten it"
            )
            text = text[:room]
        self.size += len(text)
        self.files.append(MemoryFile(path, kind, text))
        for target in imports(text):
            self._import(path, target, root, [*chain, real])

    def _import(self, source: Path, target: str, root: Path | None, chain: list[Path]) -> None:
        found = _resolve(source, target)
        where = f"@{target} in {source}"
        if found is None:
            where = f"@{target.rstrip(_TRAILING) or target} in {source}"
            self.notices.append(f"import {where}: no such file; fix the path or remove it")
            return
        real = found.resolve()
        if real in chain:
            loop = " -> ".join(p.name for p in [*chain[chain.index(real) :], real])
            self.notices.append(f"import {where}: an import cycle ({loop}); not read again")
            return
        if len(chain) > MAX_HOPS:
            self.notices.append(f"import {where}: deeper than {MAX_HOPS} hops of imports; not read")
            return
        if root is not None and not real.is_relative_to(root) and not self._trusted():
            self.trust.withhold("memory import", f"@{target}", source)
            self.notices.append(
                f"import {where}: {real} is outside {root} and the project {self.project} is "
                "not trusted, so it was not read; to follow it, "
                + ENABLE_HINT.format(root=self.project)
            )
            return
        self._read(found, "import", root, chain)

    def _trusted(self) -> bool:
        try:
            return self.trust.is_trusted(self.project)
        except ConfigurationError as exc:  # an unsafe trust file: nothing is trusted
            self.notices.append(str(exc))
            return False


def _resolve(source: Path, target: str) -> Path | None:
    """The file ``@target`` in ``source`` names (trailing punctuation tried off), or None."""
    for candidate in dict.fromkeys([target, target.rstrip(_TRAILING)]):
        if not candidate:
            continue
        path = Path(candidate).expanduser()
        path = path if path.is_absolute() else source.parent / path
        if path.is_file():
            return path
    return None


def imports(text: str) -> Iterator[str]:
    """The ``@path`` imports of a memory file's text, outside code spans and fenced blocks."""
    fence: str | None = None
    for line in text.splitlines():
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        yield from _IMPORT.findall(_SPAN.sub(" ", line))
