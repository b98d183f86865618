"""Claude Code's tool names and the tools of this runtime that do their job: the one table.

Read wherever a Claude Code name is written by a user (a spec's ``tools:`` and ``disallowedTools:``,
permission rules, hook matchers) and wherever one of our calls is shown to Claude Code's tooling
(hook events carry Claude Code's tool name and input field names, ``Write`` with ``file_path``, so
existing hook scripts run unchanged).

A Claude Code name may stand for several of our tools: ``Agent`` is the whole ``agent_*`` family
(spawn, then send, wait, cancel, list), ``TaskUpdate`` is how a teammate claims, completes or fails a
task. Whether a tool is really offered depends on the agent: ``bash`` needs a sandbox, ``web_search``
a search provider, the team tools a team. Names with no counterpart at all are in
:data:`UNSUPPORTED`, with the reason.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "CLAUDE_TOOLS",
    "UNSUPPORTED",
    "ClaudeTool",
    "ToolEntry",
    "claude_name_of",
    "from_claude_input",
    "known_tool_names",
    "parse_tool_entry",
    "to_claude_input",
    "unavailable_reason",
]


@dataclass(frozen=True)
class ClaudeTool:
    """One Claude Code tool: the tools of ours that do its job, and how its input fields are named.

    ``fields`` maps our argument names to Claude Code's input field names where they differ
    (``path`` -> ``file_path``); it applies to ``natives[0]``, the tool a hook event names.
    """

    name: str
    natives: tuple[str, ...]
    fields: Mapping[str, str] = field(default_factory=dict)


def _table(*tools: ClaudeTool) -> Mapping[str, ClaudeTool]:
    return MappingProxyType({t.name: t for t in tools})


_FILE = {"path": "file_path"}
_AGENTS = ("agent_spawn", "agent_send", "agent_wait", "agent_cancel", "agent_list")
_SPAWN_FIELDS = {"agent": "subagent_type", "task": "prompt"}

CLAUDE_TOOLS: Mapping[str, ClaudeTool] = _table(
    ClaudeTool("Read", ("read_file",), _FILE),
    ClaudeTool("NotebookRead", ("read_file",), {"path": "notebook_path"}),
    ClaudeTool("Write", ("write_file",), _FILE),
    ClaudeTool("Edit", ("edit_file", "multi_edit"), _FILE),
    ClaudeTool("MultiEdit", ("multi_edit",), _FILE),
    ClaudeTool("NotebookEdit", ("notebook_edit",), {"path": "notebook_path"}),
    ClaudeTool("Glob", ("glob_files",)),
    ClaudeTool("Grep", ("grep_files",)),
    ClaudeTool("LS", ("list_files",)),
    ClaudeTool("Bash", ("bash", "bash_output", "kill_shell")),
    ClaudeTool("BashOutput", ("bash_output",)),
    ClaudeTool("KillShell", ("kill_shell",)),
    ClaudeTool("KillBash", ("kill_shell",)),
    ClaudeTool("TaskOutput", ("bash_output", "agent_wait")),
    ClaudeTool("TaskStop", ("kill_shell", "agent_cancel")),
    ClaudeTool("WebFetch", ("web_fetch",)),
    ClaudeTool("WebSearch", ("web_search",)),
    ClaudeTool("Agent", _AGENTS, _SPAWN_FIELDS),
    ClaudeTool("Task", _AGENTS, _SPAWN_FIELDS),
    ClaudeTool("TodoWrite", ("todo_write",)),
    ClaudeTool("TodoRead", ("todo_read",)),
    ClaudeTool("EnterPlanMode", ("enter_plan_mode",)),
    ClaudeTool("ExitPlanMode", ("exit_plan_mode",)),
    ClaudeTool("AskUserQuestion", ("ask_user_question",)),
    ClaudeTool("Skill", ("skill",)),
    ClaudeTool("TeamCreate", ("createTeam", "spawnMember")),
    ClaudeTool("TeamDelete", ("deleteTeam", "endTeam")),
    ClaudeTool("TaskCreate", ("assignTask",)),
    ClaudeTool("TaskList", ("listTasks",)),
    ClaudeTool("TaskGet", ("listTasks",)),
    ClaudeTool("TaskUpdate", ("claimTask", "completeTask", "failTask")),
    ClaudeTool("SendMessage", ("sendMessage", "broadcastMessage")),
)
"""Claude Code tool name -> what does its job here."""

UNSUPPORTED: Mapping[str, str] = MappingProxyType(
    {
        "LSP": "needs a language server plug-in; use grep_files and read_file",
        "CronCreate": "scheduled prompts are not offered; schedule calls from your application",
        "CronDelete": "scheduled prompts are not offered",
        "CronList": "scheduled prompts are not offered",
        "EnterWorktree": "use isolation: worktree in the spec instead",
        "ExitWorktree": "use isolation: worktree in the spec instead",
        "ListMcpResourcesTool": "MCP resources are not offered, only MCP tools",
        "ReadMcpResourceTool": "MCP resources are not offered, only MCP tools",
        "PowerShell": "only Bash is offered (in a Linux sandbox)",
        "Artifact": "a claude.ai feature",
    }
)
"""Claude Code tools with no counterpart here, and what to do instead."""

_BY_NATIVE: Mapping[str, ClaudeTool] = MappingProxyType(
    {t.natives[0]: t for t in reversed(list(CLAUDE_TOOLS.values()))}
)
_ENTRY = re.compile(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*\((.*)\)\s*", re.DOTALL)


@dataclass(frozen=True)
class ToolEntry:
    """One entry of a ``tools:`` list: ``Bash(git diff:*)`` is tool ``Bash`` with an argument.

    ``natives`` is empty for a name that is neither Claude Code's nor ours (``claude`` is then
    False); ``argument`` is what the parentheses held, stripped (``None`` without them).
    """

    written: str
    name: str
    natives: tuple[str, ...]
    argument: str | None
    claude: bool

    @property
    def agents(self) -> list[str] | None:
        """For ``Agent(a, b)`` / ``Task(a, b)``: the agents it may spawn; None: any of them."""
        if self.name not in ("Agent", "Task") or self.argument is None:
            return None
        return [a.strip() for a in self.argument.split(",") if a.strip()]


def parse_tool_entry(entry: str) -> ToolEntry:
    """Read one written tool entry: a Claude Code name (maybe with a rule in parentheses) or ours."""
    text = entry.strip()
    match = _ENTRY.fullmatch(text)
    name, argument = (match.group(1), match.group(2).strip()) if match else (text, None)
    known = CLAUDE_TOOLS.get(name)
    if known is not None:
        return ToolEntry(text, name, known.natives, argument, claude=True)
    return ToolEntry(text, name, (), argument, claude=False)


def known_tool_names() -> frozenset[str]:
    """Every tool name this table knows: Claude Code's (also those with no counterpart here,
    :data:`UNSUPPORTED`) and the tools of ours that do their jobs. A user's own tools and MCP
    tools (``mcp__server__tool``) are not in it."""
    natives = (n for t in CLAUDE_TOOLS.values() for n in t.natives)
    return frozenset((*CLAUDE_TOOLS, *UNSUPPORTED, *natives))


def claude_name_of(native: str) -> str | None:
    """The Claude Code name a hook sees for one of our tools (``write_file`` -> ``Write``)."""
    known = _BY_NATIVE.get(native)
    return known.name if known is not None else None


def to_claude_input(native: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Our arguments under Claude Code's field names (``{"path": ...}`` -> ``{"file_path": ...}``)."""
    known = _BY_NATIVE.get(native)
    fields = known.fields if known is not None else {}
    return {fields.get(key, key): value for key, value in arguments.items()}


def from_claude_input(native: str, tool_input: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`to_claude_input`, for input a hook rewrote (``updatedInput``)."""
    known = _BY_NATIVE.get(native)
    back = {v: k for k, v in (known.fields if known is not None else {}).items()}
    return {back.get(key, key): value for key, value in tool_input.items()}


def unavailable_reason(written: str) -> str:
    """What to do about a ``tools:`` entry that selects nothing: Claude Code's reason for its tools
    with no counterpart (:data:`UNSUPPORTED`), else a hint for names run together without commas,
    a misspelt Claude Code name, or a name that is no tool at all."""
    if written in UNSUPPORTED:
        return UNSUPPORTED[written]
    parts = written.split()
    if len(parts) > 1 and all(parse_tool_entry(part).claude for part in parts):
        return f"separate tool names with commas: {', '.join(parts)}"
    close = difflib.get_close_matches(written, [*CLAUDE_TOOLS, *UNSUPPORTED], n=1, cutoff=0.75)
    if close:
        return f"did you mean {close[0]!r}?"
    return (
        "neither a Claude Code tool nor one of ours; remove it, or write an MCP server's tool "
        "as mcp__<server>__<tool>"
    )
