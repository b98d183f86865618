"""Reading skills: one :class:`Skill` per ``SKILL.md``, and :class:`SkillLibrary`, the folders an
agent's skills come from (per org and user when the folder names hold ``{org}`` / ``{user}``)."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import yaml

from ..context import RuntimeContext
from ..errors import ConfigurationError
from ..store.base import path_segment
from ._lenient import quote_values

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
MAX_SKILL_CHARS = 200_000
MAX_FILE_CHARS = 100_000
MAX_LISTED_FILES = 200
NO_ID = "%none"


@dataclass(frozen=True)
class Skill:
    """A skill: its instructions (``body``) and the folder holding them and their files."""

    name: str
    description: str
    body: str
    root: Path
    allowed_tools: tuple[str, ...] = ()
    #: False for ``disable-model-invocation: true``: in Claude Code only the user runs it, so the
    #: model is not offered it and subagents do not preload it.
    model_invocable: bool = True

    def files(self) -> list[str]:
        """The other files of the skill, relative to its folder (at most 200)."""
        found: list[str] = []
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                rel = Path(folder, name).relative_to(self.root).as_posix()
                if rel != SKILL_FILE and not name.startswith("."):
                    found.append(rel)
                if len(found) >= MAX_LISTED_FILES:
                    return found
        return found

    def read(self, relative: str) -> str:
        """A text file of the skill; ``ValueError`` (with a readable reason) when it is not one."""
        path = (self.root / relative).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise ValueError(f"{relative!r} is outside skill {self.name}'s folder")
        if not path.is_file():
            raise ValueError(
                f"skill {self.name} has no file {relative!r}; its files: "
                f"{', '.join(self.files()) or 'none'}"
            )
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(MAX_FILE_CHARS + 1)
        if len(text) > MAX_FILE_CHARS:
            text = text[:MAX_FILE_CHARS] + f"\n[cut at {MAX_FILE_CHARS} characters]"
        return text

    def full_text(self) -> str:
        """What the model reads: a header naming the skill and its files, then the instructions."""
        files = self.files()
        listing = (
            f"\nFiles of this skill (read one with skill(skill, file)): {', '.join(files)}"
            if files
            else ""
        )
        return f"# Skill: {self.name}\n{self.description}{listing}\n\n{self.body}"


def _yaml(front: str, path: Path) -> object:
    """The frontmatter's YAML; as Claude Code, a value holding an unquoted ': ' (``description:
    Use when: ...``) is read as if quoted, with a warning."""
    try:
        return yaml.safe_load(front)
    except yaml.YAMLError as exc:
        problem = ConfigurationError(f"{path}: the frontmatter is not valid YAML: {exc}")
    rescued = quote_values(front)
    if rescued is None:
        raise problem from None
    text, quoted = rescued
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        raise problem from None
    for q in quoted:
        log.warning("%s:%d: %s holds an unquoted ': '; loaded as if quoted (quote it: "
                    '%s: "...")', path, q.index + 1, q.key, q.key)  # fmt: skip
    return data


def _split(text: str, path: Path) -> tuple[dict[str, object], str]:
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end < 0:
        raise ConfigurationError(f"{path}: the frontmatter is not closed; end it with a '---' line")
    data = _yaml(text[3:end], path) or {}
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path}: the frontmatter must be a mapping of keys")
    return data, text[end + 4 :].lstrip("\n")


_TOOL_ENTRY = re.compile(r"[A-Za-z_][\w-]*(?:\([^)]*\))?")


def _tools(value: object) -> tuple[str, ...]:
    """``allowed-tools``: names separated by commas or spaces (``Bash(git diff:*)`` kept whole)."""
    if isinstance(value, str):
        return tuple(_TOOL_ENTRY.findall(value))
    if isinstance(value, list):
        return tuple(str(t).strip() for t in value if str(t).strip())
    return ()


def load_skill(path: Path) -> Skill:
    """The skill of a ``SKILL.md``; ``ConfigurationError`` naming the file when it cannot be read.

    ``name`` defaults to the folder's name; ``description`` to the first line of the body.
    """
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read(MAX_SKILL_CHARS + 1)
    if len(text) > MAX_SKILL_CHARS:
        raise ConfigurationError(f"{path}: a skill is at most {MAX_SKILL_CHARS} characters")
    data, body = _split(text, path)
    name = str(data.get("name") or path.parent.name).strip()
    first = next((line.strip("# ").strip() for line in body.splitlines() if line.strip()), "")
    description = " ".join(str(data.get("description") or first).split())
    return Skill(
        name=name,
        description=description[:1024],
        body=body.strip(),
        root=path.parent,
        allowed_tools=_tools(data.get("allowed-tools", data.get("allowed_tools"))),
        model_invocable=data.get("disable-model-invocation") is not True,
    )


USER_ONLY = (
    "skill {name!r} says disable-model-invocation: true: in Claude Code only the user runs it, "
    "so it is not offered to agents; do the task without it"
)


def find_skill(skills: Mapping[str, Skill], name: str) -> Skill | None:
    """The skill called ``name``: by its ``name:``, else by its folder's name (a ``SKILL.md`` in
    ``release-notes/`` saying ``name: Release Notes`` is found by either)."""
    found = skills.get(name)
    if found is None:
        found = next((s for s in skills.values() if s.root.name == name), None)
    return found


def _scan(folder: Path) -> dict[str, Skill]:
    found: dict[str, Skill] = {}
    if not folder.is_dir():
        return found
    for entry in sorted(folder.iterdir()):
        candidate = entry / SKILL_FILE
        if not candidate.is_file():
            continue
        try:
            skill = load_skill(candidate)
        except (ConfigurationError, OSError) as exc:
            log.warning("skill %s is not offered: %s", candidate, exc)
            continue
        found.setdefault(skill.name, skill)
    return found


class SkillLibrary:
    """The folders skills come from, in priority order (an earlier folder's skill of a name wins).

    A folder may be a template: ``/srv/skills/{org}/{user}`` becomes the caller's folder, each id
    escaped as one path segment, so tenants' skills stay apart.
    """

    def __init__(self, folders: Sequence[Path | str]) -> None:
        self.folders = [str(f) for f in folders]
        self._cache: dict[str, tuple[float, dict[str, Skill]]] = {}

    @classmethod
    def of(cls, value: SkillLibrary | Path | str | Iterable[Path | str] | None) -> SkillLibrary:
        if isinstance(value, SkillLibrary):
            return value
        if value is None:
            return cls([])
        if isinstance(value, str | Path):
            return cls([value])
        return cls(list(value))

    def __bool__(self) -> bool:
        return bool(self.folders)

    def folders_for(self, ctx: RuntimeContext | None) -> list[Path]:
        """The folders of ``ctx``: each id one escaped path segment; no org (or no context) is
        ``%none``, a name no escaped id can take."""
        ids = {"org": ctx.org_id if ctx else None, "user": ctx.user_id if ctx else None}
        names = {k: NO_ID if v is None else path_segment(v) for k, v in ids.items()}
        return [Path(f.format(**names)) for f in self.folders]

    def skills_sync(self, ctx: RuntimeContext | None = None) -> dict[str, Skill]:
        """The skills ``ctx`` can load (folders re-read when their modification time changes)."""
        merged: dict[str, Skill] = {}
        for folder in self.folders_for(ctx):
            key = str(folder)
            try:
                stamp = max(
                    [
                        folder.stat().st_mtime,
                        *(p.stat().st_mtime for p in folder.glob(f"*/{SKILL_FILE}")),
                    ]
                )
            except OSError:
                continue
            cached = self._cache.get(key)
            if cached is None or cached[0] != stamp:
                cached = self._cache[key] = (stamp, _scan(folder))
            for name, skill in cached[1].items():
                merged.setdefault(name, skill)
        return merged

    async def skills(self, ctx: RuntimeContext | None = None) -> dict[str, Skill]:
        """:meth:`skills_sync` in a worker thread (it reads files)."""
        return await anyio.to_thread.run_sync(self.skills_sync, ctx)
