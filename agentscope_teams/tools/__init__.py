"""Tools: ``@tool`` and ``Toolkit``, the built-in workspace file tools, and the permission engine."""

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
from .decorator import parse_docstring, tool
from .filesystem import EDIT_TOOLS, filesystem_tools
from .output import ToolOutput, output_of
from .paths import resolve_in_workspace
from .permissions import (
    Decision,
    PermissionDecision,
    PermissionEngine,
    format_rule,
    parse_rule,
    remember_rule,
    rule_matches,
)
from .toolkit import DEFAULT_MAX_OUTPUT_CHARS, Toolkit

__all__ = [
    "ALIASES",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "EDIT_TOOLS",
    "RAW_ARGUMENTS_KEY",
    "Decision",
    "PermissionDecision",
    "PermissionEngine",
    "Tool",
    "ToolEnv",
    "Toolkit",
    "ToolOutput",
    "current_tool_env",
    "filesystem_tools",
    "format_rule",
    "get_tool_env",
    "parse_docstring",
    "parse_rule",
    "remember_rule",
    "resolve_in_workspace",
    "resolve_tool_name",
    "rule_matches",
    "output_of",
    "to_output",
    "tool",
    "use_tool_env",
]
