"""``SkillExtension``: the ``skill`` tool (Claude Code's ``Skill``), bound to the caller's skills.

The tool's description lists the skills the caller can load (name and description); a call returns
a skill's instructions, or one of its files. Loading a skill grants nothing: its ``allowed-tools``
are shown to the model, and the agent's permission rules and mode still decide every call.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..agent.extension import CallScope, Extension
from ..errors import ToolError
from ..tools import Tool
from ..tools.decorator import make_tool
from .library import USER_ONLY, Skill, SkillLibrary, find_skill

MAX_LISTED_SKILLS = 100


async def skill(skill: str, file: str | None = None) -> str:
    """Load a skill: its instructions (follow them), or one of its files.

    Args:
        skill: The skill's name, from the list above.
        file: Optional: a file of the skill to read, relative to its folder.
    """
    raise NotImplementedError  # template: SkillExtension binds the implementation


_TEMPLATE = make_tool(skill, read_only=True, concurrency_safe=True)


def listing(skills: dict[str, Skill]) -> str:
    """The skills the model may load, one line each (the user-only ones left out)."""
    skills = {n: s for n, s in skills.items() if s.model_invocable}
    shown = list(skills.values())[:MAX_LISTED_SKILLS]
    lines = [f"- {s.name}: {s.description}" for s in shown]
    more = len(skills) - len(shown)
    if more > 0:
        lines.append(f"- ... and {more} more (load one by name)")
    return "\n".join(lines)


@dataclasses.dataclass
class _Loaded:
    skills: dict[str, Skill] | None = None


class SkillExtension(Extension):
    """Offers ``skill`` when the caller has skills (read once per call from the library)."""

    def __init__(self, library: SkillLibrary) -> None:
        self.library = library

    async def prepare(self, scope: CallScope) -> None:
        scope.local(self, _Loaded).skills = await self.library.skills(scope.ctx)

    def tools(self, scope: CallScope) -> list[Tool]:
        skills = scope.local(self, _Loaded).skills
        if not skills or not any(s.model_invocable for s in skills.values()):
            return []

        async def load(skill: str, file: str | None = None) -> str:
            found = find_skill(skills, skill)
            if found is None:
                offered = [n for n, s in skills.items() if s.model_invocable]
                raise ToolError(
                    f"unknown skill {skill!r}; available skills: {', '.join(offered) or 'none'}"
                )
            if not found.model_invocable:
                raise ToolError(USER_ONLY.format(name=found.name))
            if file is None:
                return found.full_text()
            try:
                return found.read(file)
            except ValueError as exc:
                raise ToolError(str(exc)) from None

        description = f"{_TEMPLATE.description}\n\nAvailable skills:\n{listing(skills)}"
        return [dataclasses.replace(_TEMPLATE, func=_validated(load), description=description)]


def _validated(load: Any) -> Any:
    async def call(**kwargs: Any) -> Any:
        return await load(**kwargs)

    return call
