"""``specs check --strict``: what loads but would not behave as written.

A spec that loads can still lose something its author relied on: a tool with no counterpart here,
a model name no provider reads, an MCP server it (or an ``mcp_tool`` hook) names that is not
configured, or a Claude Code key kept in ``extra`` and not acted on. Loading reports these as warnings (the spec still runs);
``--strict`` makes each one an error with the file and line, so CI can refuse them.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from ..errors import SpecError
from ..hooks.config import ELSEWHERE_EVENTS, hook_field_notes, mcp_hook_servers
from ..model.factory import model_name_problem
from ..tools.claude_code import unavailable_reason
from ._fields import _CLAUDE_CODE_KEYS, AUTO_MODE_NOTE, MODE_KEYS
from .spec import SpecLoadResult, SubagentSpec


def _line(spec: SubagentSpec, key: str) -> int | None:
    """The line of ``key:`` in the spec's file (None when built in code or not found)."""
    if spec.source is None:
        return None
    try:
        lines = Path(spec.source).read_text(encoding="utf-8-sig").splitlines()
    except OSError:
        return None
    return next((n for n, text in enumerate(lines, 1) if text.startswith(f"{key}:")), None)


def _unconnected_hooks(spec: SubagentSpec, servers: Collection[str]) -> list[SpecError]:
    """The spec's ``mcp_tool`` hooks naming a server it will not have (each fails when it fires;
    on PreToolUse / PermissionRequest it denies every call it selects)."""
    return [
        SpecError(
            spec.source,
            _line(spec, "hooks"),
            f"{where}: the mcp_tool hook calls MCP server {server!r}, which is not configured "
            f"(configured: {', '.join(sorted(servers)) or 'none'}); it would fail each time",
        )
        for where, server in mcp_hook_servers(spec.hooks)
        if server not in servers
    ]


def spec_problems(spec: SubagentSpec, mcp_servers: Collection[str] | None) -> list[SpecError]:
    """What ``spec`` would lose; ``mcp_servers`` are the configured server names (None: unknown,
    not checked)."""
    where = spec.source
    found: list[SpecError] = []
    for tool in spec.unavailable_tools:
        found.append(
            SpecError(
                where,
                _line(spec, "tools"),
                f"tool {tool!r} has no counterpart here: {unavailable_reason(tool)}",
            )
        )
    for name in spec.unknown_disallowed:
        found.append(
            SpecError(
                where,
                _line(spec, "disallowedTools"),
                f"disallowedTools names {name!r}, which is no tool here: it removes nothing",
            )
        )
    if spec.model is not None:
        problem = model_name_problem(spec.model)
        if problem is not None:
            found.append(SpecError(where, _line(spec, "model"), problem))
    if mcp_servers is not None:
        for name, server in spec.mcp_servers.items():
            if server is None and name not in mcp_servers:
                configured = ", ".join(sorted(mcp_servers)) or "none"
                found.append(
                    SpecError(
                        where,
                        _line(spec, "mcpServers"),
                        f"MCP server {name!r} is not configured (configured: {configured})",
                    )
                )
    for event in spec.hooks or {}:
        if event in ELSEWHERE_EVENTS:
            reason = f"hook event {event!r} never happens here: its hooks never run"
            found.append(SpecError(where, _line(spec, "hooks"), reason))
    for reason in hook_field_notes(spec.hooks):
        found.append(SpecError(where, _line(spec, "hooks"), reason))
    if mcp_servers is not None:
        found += _unconnected_hooks(spec, {*mcp_servers, *spec.mcp_servers})
    for key in spec.extra:
        if key in MODE_KEYS:  # permissionMode: auto, set aside
            found.append(SpecError(where, _line(spec, key), AUTO_MODE_NOTE))
        elif key in _CLAUDE_CODE_KEYS:
            found.append(
                SpecError(where, _line(spec, key), f"Claude Code key {key!r} is not acted on here")
            )
    return found


def strict_problems(
    result: SpecLoadResult, mcp_servers: Collection[str] | None = None
) -> list[SpecError]:
    """:func:`spec_problems` of every loaded spec, sorted by file and line."""
    found = [p for spec in result.specs.values() for p in spec_problems(spec, mcp_servers)]
    return sorted(found, key=lambda e: (str(e.file), e.line or 0))
