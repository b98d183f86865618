"""Project trust: may files of a project the operator did not write run commands or get secrets?

A project brings files that act: a ``.mcp.json`` beside its specs, ``mcpServers`` inline in its
spec files, hooks in ``.claude/settings.json`` or a spec's ``hooks:``, and what a spec file grants
its agent beyond its parent's permissions (a ``permissionMode`` reaching further, ``tools:`` allow
rules; :mod:`agentscope_teams.subagents.grants`). Cloning a repository and pointing ``--specs`` at
it must not start its commands, contact its URLs, hand it ``${OPENAI_API_KEY}`` or let its agents
run commands unasked. So such features are enabled only for a project the operator trusts, as
Claude Code asks before it uses a project's ``.mcp.json`` servers and its agent files.

The decision is per **project root**, the resolved real path (:func:`project_root`: the folder
holding ``.claude/``, or a plain spec folder itself). It is explicit (``--trust-project``,
``agentscope-teams trust add PATH``, ``HarnessAgent(..., trust_project=True)``) and remembered in a
user-owned file, ``$AGENTSCOPE_TEAMS_CONFIG_DIR/trusted-projects.json`` (default
``$XDG_CONFIG_HOME/agentscope-teams/``, else ``~/.config/agentscope-teams/``), written atomically
with mode 0600. A file (or its folder) owned by another user, group- or world-writable, or a
symlink is refused with an error: whoever can write it could trust any project.

A feature left off is recorded with :meth:`ProjectTrust.withhold`; :meth:`ProjectTrust.notice`
turns the record into the line a command prints (what was not enabled and how to enable it).
What the operator gives explicitly (``mcp_servers=`` in code, ``--mcp-config PATH``) is theirs and
never goes through this module.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigurationError

__all__ = [
    "CONFIG_DIR_ENV",
    "TRUST_FILE",
    "ProjectTrust",
    "TrustStore",
    "Withheld",
    "claude_agents_folder",
    "config_dir",
    "is_trusted",
    "project_root",
    "trust",
]

CONFIG_DIR_ENV = "AGENTSCOPE_TEAMS_CONFIG_DIR"
TRUST_FILE = "trusted-projects.json"
SCHEMA_VERSION = 1
ENABLE_HINT = "pass --trust-project, or run `agentscope-teams trust add {root}`"


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where the user's agentscope-teams settings live (see the module docstring)."""
    env = os.environ if environ is None else environ
    if env.get(CONFIG_DIR_ENV):
        return Path(env[CONFIG_DIR_ENV]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "agentscope-teams"


def claude_agents_folder(path: Path | str) -> Path | None:
    """The ``<root>/.claude/agents`` folder holding ``path`` (itself, or at any depth below it, as
    Claude Code reads the subfolders of ``.claude/agents`` too); None outside one. No file system
    access: the path is taken as written."""
    found = Path(path)
    for folder in (found, *found.parents):
        if folder.name == "agents" and folder.parent.name == ".claude":
            return folder
    return None


def project_root(path: Path | str) -> Path:
    """The project a spec folder, spec file or ``.mcp.json`` belongs to, as a resolved real path:
    ``<root>`` for anything in ``<root>/.claude/agents`` (its subfolders too) or ``<root>/.claude``;
    for anything else, its folder (a file's parent, a folder itself)."""
    found = Path(path).expanduser().resolve()
    if not found.is_dir():
        found = found.parent
    agents = claude_agents_folder(found)
    if agents is not None:
        return agents.parent.parent
    if found.name == ".claude":
        return found.parent
    return found


class TrustStore:
    """The remembered decisions: a JSON file of trusted project roots (see the module docstring).

    Every read checks the file is safe; every change is made under a lock file, written to a
    temporary file and renamed over the old one, so concurrent changes lose nothing.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else config_dir() / TRUST_FILE

    def roots(self) -> list[Path]:
        """Every trusted project root, in the order they were trusted."""
        return [Path(p) for p in self._read()]

    def is_trusted(self, path: Path | str) -> bool:
        return str(project_root(path)) in self._read()

    def trust(self, path: Path | str) -> Path:
        """Remember ``path``'s project as trusted; returns its root (a path that does not exist
        stands for its folder: ``--trust-project`` with a default ``./specs`` that is absent
        trusts the current directory; ``trust add`` refuses such a path first)."""
        root = project_root(path)
        with self._locked():
            projects = self._read()
            projects.setdefault(str(root), {"trusted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ")})
            self._write(projects)
        return root

    def forget(self, path: Path | str) -> bool:
        """Forget the decision for ``path``'s project; False if it was not trusted."""
        root = str(project_root(path))
        with self._locked():
            projects = self._read()
            if projects.pop(root, None) is None:
                return False
            self._write(projects)
        return True

    # -- the file ---------------------------------------------------------------------------

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            reason = f"cannot be opened ({exc.strerror}); it must be a regular file"
            raise self._refused(reason) from None
        with os.fdopen(fd, encoding="utf-8") as file:
            self._check(os.fstat(file.fileno()), "file")
            self._check(os.stat(self.path.parent), "folder")
            text = file.read()
        try:
            data = json.loads(text) if text.strip() else {"projects": {}}
            projects = data["projects"]
            if not isinstance(projects, dict):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            raise self._refused(
                'is not a trust file ({"schema_version": 1, "projects": {PATH: {...}}}); '
                "fix it or delete it and trust the projects again"
            ) from None
        return projects

    def _write(self, projects: dict[str, dict[str, str]]) -> None:
        text = json.dumps({"schema_version": SCHEMA_VERSION, "projects": projects}, indent=2)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".trusted-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:  # mkstemp: mode 0600
                file.write(text + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._check(os.stat(self.path.parent), "folder")
        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _check(self, info: os.stat_result, what: str) -> None:
        if info.st_uid != os.getuid():
            raise self._refused(f"{what} is owned by user {info.st_uid}, not by you")
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise self._refused(
                f"{what} is writable by the group or others (mode {stat.S_IMODE(info.st_mode):o}); "
                f"run `chmod go-w {self.path if what == 'file' else self.path.parent}`"
            )

    def _refused(self, reason: str) -> ConfigurationError:
        return ConfigurationError(
            f"{self.path}: project trust file refused: {reason}. Until then no project is trusted"
        )


@dataclass(frozen=True)
class Withheld:
    """A feature of an untrusted project that was not enabled: what, its name, where it is."""

    feature: str
    name: str
    source: Path
    root: Path

    def __str__(self) -> str:
        return f"{self.feature} {self.name!r} of {self.source}"


@dataclass
class ProjectTrust:
    """Whether a project's own files may act, and what was left off because they may not.

    ``trusted`` is the explicit answer for every project (``True``: trust, ``False``: never);
    ``None`` asks the remembered decisions of ``store`` (the user's trust file by default).
    """

    trusted: bool | None = None
    store: TrustStore = field(default_factory=TrustStore)
    withheld: list[Withheld] = field(default_factory=list)

    @classmethod
    def of(cls, value: bool | ProjectTrust | None) -> ProjectTrust:
        """``value`` as a ProjectTrust (the form ``trust_project=`` options accept)."""
        return value if isinstance(value, ProjectTrust) else cls(trusted=value)

    def is_trusted(self, path: Path | str) -> bool:
        """Whether the project of ``path`` (a spec file or folder, a ``.mcp.json``) is trusted."""
        if self.trusted is not None:
            return self.trusted
        return self.store.is_trusted(path)

    def withhold(self, feature: str, name: str, source: Path | str) -> None:
        """Record that ``feature`` ``name`` from ``source`` was not enabled (once)."""
        found = Withheld(feature, name, Path(source), project_root(source))
        if found not in self.withheld:
            self.withheld.append(found)

    def notice(self) -> str:
        """One paragraph naming what was not enabled and how to enable it; "" if nothing."""
        return untrusted_notice(self.withheld)


def untrusted_notice(withheld: list[Withheld]) -> str:
    """The text of :meth:`ProjectTrust.notice` for ``withheld`` (one line per project)."""
    lines: list[str] = []
    for root in dict.fromkeys(w.root for w in withheld):
        items = "; ".join(str(w) for w in withheld if w.root == root)
        lines.append(
            f"not enabled, project {root} is not trusted: {items}. To enable them, "
            + ENABLE_HINT.format(root=root)
        )
    return "\n".join(lines)


def is_trusted(path: Path | str) -> bool:
    """Whether the user's trust file trusts ``path``'s project."""
    return TrustStore().is_trusted(path)


def trust(path: Path | str) -> Path:
    """Trust ``path``'s project and remember it in the user's trust file; returns its root."""
    return TrustStore().trust(path)
