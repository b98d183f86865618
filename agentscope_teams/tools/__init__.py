"""Tools: ``@tool`` and ``Toolkit``, the built-in workspace file tools, the sandboxed shell tools
(:func:`shell_tools`) and the permission engine."""

from __future__ import annotations

from ..model.response_parsing import RAW_ARGUMENTS_KEY
from .base import (
    ALIASES,
    Tool,
    ToolEnv,
    current_tool_env,
    get_tool_env,
    resolve_tool_name,
    to_output,
    use_tool_env,
)
from .call_end import at_call_end, end_call
from .decorator import parse_docstring, tool
from .filesystem import EDIT_TOOLS, filesystem_tools
from .output import ToolOutput, output_of
from .paths import resolve_in_workspace
from .permissions import (
    COMMAND_TOOLS,
    Decision,
    PermissionDecision,
    PermissionEngine,
    format_rule,
    parse_rule,
    remember_rule,
    rule_matches,
)
from .shell import SHELL_TOOLS, ShellOutput, ShellResult, ShellStarted, shell_tools
from .toolkit import DEFAULT_MAX_OUTPUT_CHARS, Toolkit

__all__ = [
    "ALIASES",
    "COMMAND_TOOLS",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "EDIT_TOOLS",
    "RAW_ARGUMENTS_KEY",
    "SHELL_TOOLS",
    "Decision",
    "PermissionDecision",
    "PermissionEngine",
    "ShellOutput",
    "ShellResult",
    "ShellStarted",
    "Tool",
    "ToolEnv",
    "Toolkit",
    "ToolOutput",
    "at_call_end",
    "current_tool_env",
    "end_call",
    "filesystem_tools",
    "format_rule",
    "get_tool_env",
    "parse_docstring",
    "parse_rule",
    "remember_rule",
    "resolve_in_workspace",
    "resolve_tool_name",
    "rule_matches",
    "shell_tools",
    "output_of",
    "to_output",
    "tool",
    "use_tool_env",
]
