"""The permission rules of a project's settings files (``.claude/settings.json`` and
``settings.local.json``, key ``permissions``), which Claude Code applies to every session in the
project. They are read here because this package reads those files (:mod:`.sources`).

``deny`` and ``ask`` rules only narrow what the agents do, so they apply whatever the trust: a
project may always ask for more care. ``allow`` rules let calls run without asking, so, like the
project's hooks, they apply only to a project the operator trusts; otherwise each is recorded with
:meth:`~agentscope_teams.trust.ProjectTrust.withhold` and named by ``run`` and ``specs check``.
Keys of ``permissions`` that have no counterpart here (``defaultMode``, ``additionalDirectories``,
``disableBypassPermissionsMode``) are named in a log warning, never silently dropped.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from ..state import PermissionRule
from ..tools.permissions import Decision, parse_rule
from ..trust import ProjectTrust, Withheld
from .sources import project_files, project_of

__all__ = ["FEATURE", "settings_permission_rules", "withheld_rules"]

log = logging.getLogger(__name__)

FEATURE = "permission rule"
#: The lists of ``permissions``, in the order their rules are added.
BEHAVIORS: tuple[Decision, ...] = ("deny", "ask", "allow")


def settings_permission_rules(specs: Any, trust: ProjectTrust) -> list[PermissionRule]:
    """The rules of the settings files of the project of ``specs`` (a spec folder or file; none
    for specs given as objects): deny and ask rules always, allow rules when it is trusted."""
    root = project_of(specs)
    if root is None:
        return []
    trusted = trust.is_trusted(root / ".claude")
    rules: list[PermissionRule] = []
    for path, data in project_files(root):
        rules += _file_rules(path, data, trusted, trust)
    return sorted(rules, key=lambda rule: BEHAVIORS.index(rule.behavior))


def withheld_rules(directory: Path, trust: ProjectTrust) -> list[Withheld]:
    """The allow rules :func:`settings_permission_rules` leaves off for an untrusted project (for
    ``specs check``)."""
    probe = ProjectTrust(trusted=trust.trusted, store=trust.store)
    settings_permission_rules(directory, probe)
    return probe.withheld


def _file_rules(
    path: Path, data: dict[str, Any], trusted: bool, trust: ProjectTrust
) -> list[PermissionRule]:
    section = data.get("permissions")
    if section is None:
        return []
    if not isinstance(section, dict):
        raise ConfigurationError(f"{path}: permissions must be an object with allow/deny/ask lists")
    ignored = sorted(set(section) - set(BEHAVIORS))  # defaultMode, additionalDirectories, ...
    if ignored:
        log.warning("%s: permissions keys %s are not applied here (only allow, deny and ask "
                    "rules are)", path, ignored)  # fmt: skip
    rules = []
    for behavior in BEHAVIORS:
        for index, text in enumerate(_entries(section, behavior, path)):
            rule = _rule(text, behavior, f"{path}: permissions.{behavior}[{index}]")
            if behavior == "allow" and not trusted:
                trust.withhold(FEATURE, f"allow {text}", path)
                continue
            rules.append(rule)
    return rules


def _entries(section: dict[str, Any], behavior: str, path: Path) -> list[Any]:
    entries = section.get(behavior) or []
    if not isinstance(entries, list):
        raise ConfigurationError(
            f'{path}: permissions.{behavior} must be a list of rules such as "Read(./.env)"'
        )
    return entries


def _rule(text: Any, behavior: Decision, where: str) -> PermissionRule:
    if not isinstance(text, str):
        raise ConfigurationError(
            f'{where}: a rule is a string such as "Bash(npm test:*)", got {type(text).__name__}'
        )
    try:
        return parse_rule(text.strip(), behavior)
    except ValueError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None
