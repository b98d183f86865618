"""A hook's ``if`` (Claude Code v2.1.85+): a permission rule the tool call must match for the hook
to be started, read and matched by the permission engine's own rule code.

``"Bash(git push *)"``, ``"Edit(src/**)"``, ``"Write(*.env)"``, ``"mcp__github"``: Claude Code's
rule syntax and tool names (:func:`~agentscope_teams.tools.permissions.parse_rule`; the names
resolve through the tool-name table, ``Edit`` naming ``edit_file`` and ``multi_edit``). It is
matched as a deny rule is (:func:`~agentscope_teams.tools.permissions.rule_matches`), the broad
reading, so a guard is started for every call a deny rule of the same text would refuse: a Bash
rule matches a compound command when any of its simple commands matches (``ls && git push``),
past variable assignments (``FOO=bar git push``) and wrappers (``timeout 5 git push``); a path
rule matches any spelling of the path and what is under a directory it names. Where that reading
is unsure (a command that cannot be parsed with certainty, or a word only known when the shell
runs that could complete the pattern: ``git $X``), the hook is started: a guard errs towards
running, never towards letting a call through unseen.

Only tool events carry a call (:data:`TOOL_EVENTS`); Claude Code never runs a hook with ``if``
on other events, and neither do we (it is left out at load, with a warning).

A rule whose tool name is no known tool (:func:`unknown_tool`: not a name of the tool-name table,
:func:`~agentscope_teams.tools.claude_code.known_tool_names`, nor ``mcp__...``) is most likely a
typo (``Bsh(git *)``) that would never match: a warning at load names the closest known names,
and on a guard event the runner denies the calls the hook's matcher selects, unless the agent
has a tool of that name after all (its own ``@tool``: :func:`names_an_offered_tool`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

from ..state import PermissionRule
from ..tools.claude_code import known_tool_names
from ..tools.command_rules import might_match, parses
from ..tools.permissions import is_command_tool, parse_rule, rule_matches

__all__ = [
    "TOOL_EVENTS",
    "condition_holds",
    "names_an_offered_tool",
    "parse_condition",
    "unknown_tool",
]

TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest")
"""The events that carry a tool call: the only ones whose hooks an ``if`` lets run."""


def parse_condition(text: Any) -> PermissionRule:
    """``text`` as a rule; ValueError (with what to write instead) if it is not one."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("must be a permission rule such as 'Bash(git *)' or 'Edit(src/**)'")
    try:
        return parse_rule(text, "deny")
    except ValueError:
        raise ValueError(
            f"{text!r} is not a permission rule; write Tool or Tool(pattern), such as "
            "'Bash(git *)' or 'Edit(src/**)'"
        ) from None


def condition_holds(rule: PermissionRule, payload: Mapping[str, Any]) -> bool:
    """Whether the tool call of ``payload`` (its ``_tool``, ``_arguments`` and ``_workspace``,
    from :func:`~.runner.tool_payload`) matches ``rule``; a call given without its tool (an
    event fired by hand) runs the hook."""
    tool, arguments = payload.get("_tool"), payload.get("_arguments")
    if tool is None or not isinstance(arguments, Mapping):
        return True
    workspace = payload.get("_workspace")
    if rule_matches(rule, tool, arguments, workspace=workspace):
        return True
    if rule.pattern is None or not is_command_tool(tool):
        return False
    named = rule_matches(PermissionRule(tool=rule.tool, behavior="deny"), tool, arguments)
    command = arguments.get(tool.primary_argument or "command")
    return (
        named
        and isinstance(command, str)
        and (not parses(command) or might_match(rule.pattern, command))
    )


def unknown_tool(rule: PermissionRule) -> str | None:
    """Why ``rule`` names no known tool, with the known names closest to it; None when its name
    is one of the tool-name table's, an ``mcp__`` name or a glob that matches a known name."""
    name = rule.tool
    known = known_tool_names()
    if name in known or name.startswith("mcp__"):
        return None
    if any(c in name for c in "*?[") and any(fnmatchcase(n, name) for n in known):
        return None
    by_lower: dict[str, list[str]] = {}
    for known_name in sorted(known):
        by_lower.setdefault(known_name.lower(), []).append(known_name)
    near = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
    closest = ", ".join(n for lower in near for n in by_lower[lower]) or "none"
    return (
        f"{name!r} is no Claude Code tool, no tool of ours and no mcp__server__tool name, so "
        f"this if never matches a call (closest: {closest})"
    )


def names_an_offered_tool(rule: PermissionRule, payload: Mapping[str, Any]) -> bool:
    """Whether ``rule`` names one of the tools the agent offers (the payload's ``_offered``, or
    else the called ``_tool``): a name :func:`unknown_tool` does not know may be the agent's own."""
    listed = payload.get("_offered")
    offered = listed() if callable(listed) else [payload.get("_tool")]
    named = PermissionRule(tool=rule.tool, behavior="deny")
    return any(tool is not None and rule_matches(named, tool, {}) for tool in offered)
