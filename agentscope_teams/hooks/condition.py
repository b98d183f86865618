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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..state import PermissionRule
from ..tools.command_rules import might_match, parses
from ..tools.permissions import is_command_tool, parse_rule, rule_matches

__all__ = ["TOOL_EVENTS", "condition_holds", "parse_condition"]

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
