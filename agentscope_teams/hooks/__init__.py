"""Hooks with Claude Code's protocol: commands, http POSTs, model prompts (or Python callables) run
at agent events.

A command hook gets the event as JSON on stdin and answers with its exit code (2: block, with
stderr as the reason) and optionally JSON on stdout; an http hook gets it as the POST body and
answers with the same JSON; an mcp_tool hook calls a tool of one of the agent's MCP servers,
whose text answers as stdout does; a prompt hook's model answers ``{"ok": ..., "reason": ...}``; see
``docs/hooks.md``. Hooks come from code
(``HarnessAgent(hooks=...)``: the operator's), a project's ``.claude/settings.json`` and a spec's
``hooks:`` (both run only for a trusted project, :mod:`.sources`), and the managed settings (the
administrator's, which may also restrict hooks: :mod:`.policy`).
"""

from .config import DEFAULT_TIMEOUT, EVENTS, Hook, HookMap, hooks_from_callables, parse_hooks
from .mcp_tool import McpAnswer, McpServers
from .outcome import HookOutcome
from .policy import MANAGED_SETTINGS_ENV, HookPolicy, managed_settings_path
from .runner import Hooks, claude_mode, tool_payload
from .sources import (
    hooks_of_spec,
    managed_hooks,
    project_hooks,
    project_settings,
    settings_hooks,
    spec_hooks,
    withheld_hooks,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "EVENTS",
    "MANAGED_SETTINGS_ENV",
    "Hook",
    "HookMap",
    "HookOutcome",
    "HookPolicy",
    "Hooks",
    "McpAnswer",
    "McpServers",
    "claude_mode",
    "hooks_from_callables",
    "hooks_of_spec",
    "managed_hooks",
    "managed_settings_path",
    "parse_hooks",
    "project_hooks",
    "project_settings",
    "settings_hooks",
    "spec_hooks",
    "tool_payload",
    "withheld_hooks",
]
