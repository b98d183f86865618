"""What a spec file may let its agent do beyond what its parent may, decided by project trust.

Two parts of a spec give its agent more than the agent that spawns it: a ``permissionMode`` that
lets it act further without asking than its parent's mode (``bypassPermissions``, ``acceptEdits``,
and under a parent in ``plan`` mode also ``dontAsk`` or ``default``), and the ``tools:`` entries
written with a rule (``Bash(git diff:*)``), whose calls run without asking. Written in a spec file
of a project the operator has not trusted (a cloned repository's ``.claude/agents/x.md``), neither
is granted, as Claude Code uses a folder's agent files only once the folder is trusted:

* the agent keeps its parent's mode; a mode that reaches less far still applies (``plan``,
  ``dontAsk``; a parent in ``acceptEdits`` or ``bypassPermissions`` takes precedence over a
  spec's ``default``: :mod:`agentscope_teams.tools.modes`, the one home of these rules);
* its ``tools:`` rules still limit that tool to the calls they match, but those calls ask (or are
  refused where nobody can be asked) as any other call would under the parent's rules.

Each grant left off is recorded with :meth:`~agentscope_teams.trust.ProjectTrust.withhold`, so the
command names it and says how to enable it, as for the project's hooks and MCP servers. A spec
built in code (no ``source`` file) is the operator's and keeps all it says; so does a spec file of
a trusted project (``--trust-project``, ``agentscope-teams trust add``, ``trust_project=True``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..state import PermissionMode
from ..tools.modes import MODE_REACH, child_mode, claude_name
from ..trust import ProjectTrust, Withheld

__all__ = [
    "MODE_FEATURE",
    "MODE_REACH",
    "RULE_FEATURE",
    "Grants",
    "spec_grants",
    "spec_mode",
    "withheld_grants",
]

MODE_FEATURE = "permissionMode"
RULE_FEATURE = "tools: allow rule"


@dataclass(frozen=True)
class Grants:
    """What a spec grants its agent: its ``mode`` (the parent's precedence and what the spec may
    raise applied: :func:`~agentscope_teams.tools.modes.child_mode`) and whether its ``tools:``
    rules ``allow`` their calls without asking."""

    mode: PermissionMode
    allow: bool


def spec_grants(spec: Any, parent_mode: PermissionMode, trust: ProjectTrust) -> Grants:
    """What ``spec`` grants an agent spawned by one in ``parent_mode`` (module docstring);
    what an untrusted project's spec file may not grant is recorded in ``trust``."""
    mode = spec.permission_mode
    kept = child_mode(parent_mode, mode, "untrusted")
    if (
        spec.source is None
        or not (kept.refused or spec.tool_rules)
        or trust.is_trusted(spec.source)
    ):
        return Grants(child_mode(parent_mode, mode, "operator").mode, True)
    if kept.refused is not None:
        trust.withhold(MODE_FEATURE, claude_name(kept.refused), spec.source)
    for rule in spec.tool_rules:
        trust.withhold(RULE_FEATURE, rule, spec.source)
    return Grants(kept.mode, False)


def spec_mode(spec: Any, parent_mode: PermissionMode, trust: ProjectTrust) -> PermissionMode:
    """The mode an agent built from ``spec`` runs in under a parent in ``parent_mode`` (what
    :func:`~.spawn.spec_permissions` gives it), nothing recorded in ``trust``."""
    if spec.permission_mode is None:
        return parent_mode
    probe = ProjectTrust(trusted=trust.trusted, store=trust.store)
    return spec_grants(spec, parent_mode, probe).mode


def withheld_grants(
    specs: Iterable[Any], trust: ProjectTrust, parent_mode: PermissionMode = "default"
) -> list[Withheld]:
    """What :func:`spec_grants` leaves off for ``specs`` spawned by an agent in ``parent_mode``
    (for the notice a command prints up front); nothing is recorded in ``trust``."""
    probe = ProjectTrust(trusted=trust.trusted, store=trust.store)
    for spec in specs:
        spec_grants(spec, parent_mode, probe)
    return probe.withheld
