"""The MCP servers a project brings, enabled only when the project is trusted.

Two places hold servers the operator did not write: the project's ``.mcp.json`` beside its specs
(:func:`project_mcp_json`) and ``mcpServers`` defined inline in a spec file. Both are read without
expanding ``${VAR}``; :func:`project_servers` and :func:`inline_servers` return them expanded when
the project is trusted (:class:`~agentscope_teams.trust.ProjectTrust`), else nothing, recording
each server left off so the command can say so (:func:`untrusted_servers` lists them up front,
without recording). A spec built in code (no ``source`` file) is the operator's: its inline servers
are always enabled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..trust import ProjectTrust, Withheld, project_root
from .config import HttpServer, StdioServer, expand_server, load_mcp_json

__all__ = [
    "FEATURE",
    "inline_servers",
    "project_mcp_json",
    "project_servers",
    "untrusted_servers",
]

FEATURE = "MCP server"


def project_mcp_json(specs: Any) -> Path | None:
    """The ``.mcp.json`` of the project a spec directory belongs to, as Claude Code lays it out:
    in the directory itself, or at the project root of ``<root>/.claude/agents``; else None."""
    if not isinstance(specs, str | Path):
        return None
    folder = Path(specs)
    candidates = [folder / ".mcp.json"]
    parent = folder.resolve().parent
    if parent.name == ".claude":
        candidates.append(parent.parent / ".mcp.json")
    return next((c for c in candidates if c.is_file()), None)


def project_servers(path: Path, trust: ProjectTrust) -> dict[str, StdioServer | HttpServer]:
    """The servers of the project ``.mcp.json`` at ``path``, expanded, if its project is trusted;
    else none (each recorded as withheld). A malformed file is an error either way."""
    servers = load_mcp_json(path, expand=False)
    if not trust.is_trusted(path):
        for name in servers:
            trust.withhold(FEATURE, name, path)
        return {}
    return {name: expand_server(cfg, f"{path}: mcpServers.{name}") for name, cfg in servers.items()}


def inline_servers(spec: Any, trust: ProjectTrust) -> dict[str, StdioServer | HttpServer]:
    """The servers ``spec`` defines inline, expanded, if it was written in code or its file's
    project is trusted; else none (each recorded as withheld). Raises ConfigurationError naming
    the spec file for an unset variable."""
    inline: Mapping[str, Any] = getattr(spec, "mcp_servers", None) or {}
    defined = {name: cfg for name, cfg in inline.items() if cfg is not None}
    source: Path | None = getattr(spec, "source", None)
    if not defined:
        return {}
    if source is not None and not trust.is_trusted(source):
        for name in defined:
            trust.withhold(FEATURE, name, source)
        return {}
    where = f"{source or spec.name}: mcpServers"
    return {name: expand_server(cfg, f"{where}.{name}") for name, cfg in defined.items()}


def untrusted_servers(
    specs_dir: Path | None, specs: Iterable[Any], trust: ProjectTrust
) -> list[Withheld]:
    """The servers of ``specs_dir``'s project ``.mcp.json`` and of the inline ``mcpServers`` of
    ``specs`` that would not be enabled (nothing is started, expanded or recorded)."""
    found: list[Withheld] = []
    mcp_json = project_mcp_json(specs_dir) if specs_dir is not None else None
    if mcp_json is not None and not trust.is_trusted(mcp_json):
        root = project_root(mcp_json)
        found += [
            Withheld(FEATURE, n, mcp_json, root) for n in load_mcp_json(mcp_json, expand=False)
        ]
    for spec in specs:
        source = getattr(spec, "source", None)
        names = [n for n, cfg in (spec.mcp_servers or {}).items() if cfg is not None]
        if source is not None and names and not trust.is_trusted(source):
            found += [Withheld(FEATURE, n, source, project_root(source)) for n in names]
    return found
