"""Hooks from files: the managed settings' (the administrator's, always run) and a project's,
enabled only when the operator trusts the project.

A project's ``.claude/settings.json`` and ``.claude/settings.local.json`` (their ``hooks`` key)
and a spec's ``hooks:`` frontmatter are commands a cloned repository would run on the operator's
machine. They run only for a trusted project (:mod:`agentscope_teams.trust`); otherwise each is
recorded with :meth:`~agentscope_teams.trust.ProjectTrust.withhold`, so ``run`` and
``specs check`` say which hooks were not enabled and how to enable them. The managed settings'
``allowManagedHooksOnly`` or ``disableAllHooks`` keeps them off whatever the trust
(:mod:`.policy`, which also reads the settings that restrict http hooks).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..trust import ProjectTrust, Withheld, project_root
from .config import HookMap, merged, parse_hooks
from .policy import HookPolicy, managed_settings_path, read_settings
from .runner import Hooks

__all__ = [
    "SETTINGS_FILES",
    "gated",
    "hooks_of_spec",
    "managed_hooks",
    "project_files",
    "project_hooks",
    "project_of",
    "project_settings",
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
    return _file_hooks(project_files(root))


def _file_hooks(files: list[tuple[Path, dict[str, Any]]]) -> HookMap:
    """The hooks of the settings ``files`` (:func:`settings_hooks`)."""
    found: list[HookMap] = []
    off = False
    for path, data in files:
        if data.get("hooks") is not None:
            found.append(parse_hooks(data["hooks"], path))
        if data.get("disableAllHooks") is True:
            log.info("%s: disableAllHooks is true: the project's hooks do not run", path)
            off = True
    return {} if off else merged(*found)


def project_files(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The project's settings files that exist, with their objects."""
    paths = [root / ".claude" / name for name in SETTINGS_FILES]
    return [(path, read_settings(path)) for path in paths if path.is_file()]


def project_of(specs: Any) -> Path | None:
    """The project root of ``specs`` (a spec folder or file that exists); None for specs given
    as objects."""
    if not isinstance(specs, str | Path) or not Path(specs).exists():
        return None
    return project_root(specs)


def managed_hooks(path: Path | None, data: dict[str, Any]) -> HookMap:
    """The hooks of the managed settings ``data`` (read from ``path``): the administrator's, run
    like the operator's own (in the project folder, whatever the trust); none with
    ``disableAllHooks``."""
    if path is None or data.get("hooks") is None or data.get("disableAllHooks") is True:
        return {}
    parsed = parse_hooks(data["hooks"], path)
    return {event: [replace(h, source=None) for h in hooks] for event, hooks in parsed.items()}


def project_settings(specs: Any, trust: ProjectTrust) -> tuple[HookMap, HookPolicy]:
    """The file hooks of an agent over ``specs`` (the managed settings', then its trusted
    project's settings, see the module docstring) and the policy the settings set."""
    managed_file = managed_settings_path()
    managed = read_settings(managed_file) if managed_file is not None else {}
    admin = managed_hooks(managed_file, managed)
    root = project_of(specs)
    if root is None:
        return admin, HookPolicy.layered(managed, managed_file, ())
    files = project_files(root)
    trusted = trust.is_trusted(root / ".claude")
    policy = HookPolicy.layered(managed, managed_file, files if trusted else ())
    own = _file_hooks(files)
    if policy.files_closed and own:
        key = "disableAllHooks" if policy.all_off else "allowManagedHooksOnly"
        log.warning("%s: %s: the hooks of %s/.claude do not run", managed_file, key, root)
        own = {}
    return merged(admin, gated(own, root / ".claude", trust)), policy


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
    """The file hooks of :func:`project_settings` (the managed settings' and the trusted
    project's); for specs given as objects, the managed settings' only."""
    return project_settings(specs, trust)[0]


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
    if spec.source is not None and base.policy.files_closed:
        log.warning("%s: the spec's hooks: do not run: the managed settings allow only their own",
                    spec.source)  # fmt: skip
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
