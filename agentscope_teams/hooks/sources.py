"""Hooks from a project's files, enabled only when the operator trusts the project.

A project's ``.claude/settings.json`` and ``.claude/settings.local.json`` (their ``hooks`` key)
and a spec's ``hooks:`` frontmatter are commands a cloned repository would run on the operator's
machine. They run only for a trusted project (:mod:`agentscope_teams.trust`); otherwise each is
recorded with :meth:`~agentscope_teams.trust.ProjectTrust.withhold`, so ``run`` and
``specs check`` say which hooks were not enabled and how to enable them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from ..trust import ProjectTrust, Withheld, project_root
from .config import HookMap, merged, parse_hooks
from .runner import Hooks

__all__ = [
    "SETTINGS_FILES",
    "gated",
    "hooks_of_spec",
    "project_hooks",
    "settings_hooks",
    "spec_hooks",
    "withheld_hooks",
]

log = logging.getLogger(__name__)

SETTINGS_FILES = ("settings.json", "settings.local.json")
FEATURE = "hook"


def settings_hooks(root: Path) -> HookMap:
    """The hooks of ``<root>/.claude/settings.json`` and ``settings.local.json``, as written
    (no trust decision); none if either says ``disableAllHooks: true`` (as Claude Code); a
    malformed file is a ConfigurationError naming it."""
    found: list[HookMap] = []
    off = False
    for name in SETTINGS_FILES:
        path = root / ".claude" / name
        if not path.is_file():
            continue
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"{path}: not valid JSON ({exc}); fix the file") from None
        if isinstance(data, dict) and data.get("hooks") is not None:
            found.append(parse_hooks(data["hooks"], path))
        if isinstance(data, dict) and data.get("disableAllHooks") is True:
            log.info("%s: disableAllHooks is true: the project's hooks do not run", path)
            off = True
    return {} if off else merged(*found)


def gated(hooks: HookMap, source: Path, trust: ProjectTrust) -> HookMap:
    """``hooks`` (from the file ``source``) if its project is trusted; else none, each recorded
    as withheld."""
    if not hooks or trust.is_trusted(source):
        return hooks
    for group in hooks.values():
        for hook in group:
            trust.withhold(FEATURE, hook.label, hook.source or source)
    return {}


def project_hooks(specs: Any, trust: ProjectTrust) -> HookMap:
    """The settings hooks of the project a spec folder belongs to (see the module docstring);
    none for specs given as objects."""
    if not isinstance(specs, str | Path) or not Path(specs).exists():
        return {}
    root = project_root(specs)
    return gated(settings_hooks(root), root / ".claude", trust)


def spec_hooks(data: Any, source: Path | str | None) -> HookMap:
    """A subagent spec's ``hooks:`` (its ``Stop`` is ``SubagentStop``, as in Claude Code)."""
    return parse_hooks(data, source, rename={"Stop": "SubagentStop"})


def hooks_of_spec(base: Hooks | None, spec: Any, trust: ProjectTrust) -> Hooks:
    """The hooks of an agent built from ``spec`` (a subagent's run, a team member): ``base`` (the
    parent's or the project's) and the spec's own ``hooks:`` when they may run (a spec file's only
    for a trusted project; one built in code is the operator's)."""
    base = base if base is not None else Hooks()
    if not spec.hooks:
        return base
    own = spec_hooks(spec.hooks, spec.source)
    if spec.source is not None:
        own = gated(own, Path(spec.source), trust)
    return base.with_hooks(own)


def withheld_hooks(directory: Path, specs: Any, trust: ProjectTrust) -> list[Withheld]:
    """What :func:`project_hooks` and the spec ``hooks:`` of ``specs`` leave off for an untrusted
    project (for ``specs check``)."""
    probe = ProjectTrust(trusted=trust.trusted, store=trust.store)
    project_hooks(directory, probe)
    for spec in specs:
        if spec.hooks and spec.source is not None:
            gated(spec_hooks(spec.hooks, spec.source), Path(spec.source), probe)
    return probe.withheld
