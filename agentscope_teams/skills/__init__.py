"""Claude Code skills: ``<folder>/<name>/SKILL.md`` (frontmatter ``name``, ``description``,
``allowed-tools``; files beside it) offered through the ``skill`` tool, and preloaded whole into a
subagent whose spec lists them in ``skills:``.

:class:`SkillLibrary` reads skill folders (paths, or templates with ``{org}`` and ``{user}`` so a
multi-tenant server gives each org and user their own folder by configuration); :class:`SkillExtension`
offers the ``skill`` tool, whose description lists the skills the caller can load.
"""

from .extension import SkillExtension
from .library import Skill, SkillLibrary, find_skill, load_skill

__all__ = ["Skill", "SkillExtension", "SkillLibrary", "find_skill", "load_skill"]
