"""``McpToolset`` (an agent's MCP servers and pool) and ``McpExtension`` (their tools, per call).

:class:`McpToolset` is made once by the composition root (``HarnessAgent(mcp_servers=...)``) from a
``.mcp.json``, a mapping or a directory holding one; it owns the :class:`~.pool.McpPool`. The agent
gets :meth:`McpToolset.extension` (every tool of every server); a subagent or team member built
from a spec gets :meth:`McpToolset.for_spec`: the MCP tools its ``tools:`` list names
(``mcp__<server>__<tool>``, or ``mcp__<server>`` for all of a server's tools; no ``tools:`` means all
of them) plus every tool of the servers its ``mcpServers`` defines inline or names, less those its
``disallowedTools`` names (the same forms). Servers defined
inline in a spec *file* are enabled only if its project is trusted (:mod:`.project`); the toolset's
:attr:`McpToolset.trust` records those left off.

The same servers are what the agent's ``mcp_tool`` hooks call (:meth:`McpExtension.hook_servers`).

Before each call :meth:`McpExtension.prepare` makes sure every selected server has been listed
once (starting the caller's server only if no user listed it yet). A server that cannot start is
left out of that call and named in the system prompt; it is tried again at the next call. Two
tools published under one name (which distinct servers cannot do, see
:func:`~.config.check_server_name`) never break a call: the second is left out with a warning.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agent.extension import CallScope, Extension
from ..context import RuntimeContext
from ..errors import ConfigurationError, ToolError
from ..tools import Tool
from ..trust import ProjectTrust
from .config import HttpServer, StdioServer, check_server_name, load_mcp_json, parse_servers
from .hook_servers import HookServers
from .pool import McpPool, NamedServer
from .project import inline_servers
from .tools import build_tools, is_mcp_name, names_servers, selects

log = logging.getLogger(__name__)


class McpToolset:
    """The MCP servers of one agent, by name, and the pool their connections live in."""

    def __init__(
        self,
        servers: Mapping[str, StdioServer | HttpServer],
        pool: McpPool | None = None,
        *,
        trust: ProjectTrust | None = None,
    ) -> None:
        self.servers = {
            check_server_name(name, "mcp_servers"): NamedServer(name, cfg)
            for name, cfg in servers.items()
        }
        self.pool = pool if pool is not None else McpPool()
        #: Whether spec files' projects may start their inline servers (and what was left off).
        self.trust = trust if trust is not None else ProjectTrust()
        #: What a spec without ``tools:`` inherits (the agent's own ``mcp_tools``; None: all).
        self.inherited: Sequence[str] | None = None
        #: Set by :meth:`below`: the MCP tools of the agent whose children this toolset builds
        #: (None with ``bounded``: it has none); a child never gets more of them.
        self.ceiling: McpExtension | None = None
        self.bounded = False
        self._tools: dict[tuple[str, str], tuple[int, list[Tool]]] = {}

    @classmethod
    def from_config(
        cls, config: Any, *, trust: ProjectTrust | None = None, **pool_options: Any
    ) -> McpToolset:
        """From a ``.mcp.json`` path (or a directory holding one), a mapping (``{"mcpServers":
        ...}`` or ``{name: server}``), or an existing toolset. These servers are the operator's
        (given explicitly): they are enabled whatever ``trust`` says, which only decides the
        servers spec files define inline."""
        if isinstance(config, McpToolset):
            return config
        if config is None:
            servers: dict[str, StdioServer | HttpServer] = {}
        elif isinstance(config, str | Path):
            servers = load_mcp_json(config)
        elif isinstance(config, Mapping):
            servers = parse_servers(config, "mcp_servers")
        else:
            raise ConfigurationError(
                "mcp_servers must be a path to a .mcp.json, a mapping of server names to servers "
                f"or an McpToolset, got {type(config).__name__}"
            )
        return cls(servers, McpPool(**pool_options), trust=trust)

    def extension(self, select: Sequence[str] | None = None) -> McpExtension:
        """The tools ``select`` names (``mcp__<server>__<tool>``, ``mcp__<server>``, globs) of this
        toolset's servers; every tool of every server when ``select`` is None."""
        servers = list(self.servers.values())
        if select is not None:
            wanted = names_servers(select)
            servers = [s for s in servers if s.name in wanted]
        return McpExtension(self, servers, select)

    def below(self, extensions: Sequence[Extension]) -> McpToolset:
        """This toolset for the children of an agent with ``extensions``: they get no MCP tool
        that agent's own MCP extension does not offer (servers a child's spec defines inline
        are its own)."""
        bounded = copy.copy(self)
        bounded.ceiling = next((e for e in extensions if isinstance(e, McpExtension)), None)
        bounded.bounded = True
        return bounded

    def for_spec(self, spec: Any) -> McpExtension | None:
        """The MCP tools of a subagent or member built from ``spec`` (None if it has none)."""
        entries: Sequence[str] | None = spec.tools if spec.tools is not None else self.inherited
        inline: Mapping[str, Any] = getattr(spec, "mcp_servers", None) or {}
        try:
            defined = inline_servers(spec, self.trust)
        except ConfigurationError as exc:
            log.warning("the inline MCP servers of spec %s are left out: %s", spec.name, exc)
            defined = {}
        if self.trust.withheld and not defined and any(v is not None for v in inline.values()):
            log.warning("spec %s: %s", spec.name, self.trust.notice())
        chosen: dict[str, NamedServer] = {}
        wanted = set(self.servers) if entries is None else names_servers(entries)
        for name in sorted(wanted | {n for n, cfg in inline.items() if cfg is None}):
            if name in self.servers:
                chosen[name] = self.servers[name]
            else:
                log.warning(
                    "spec %s names MCP server %r, which is not among the configured MCP "
                    "servers %s; its tools are left out",
                    spec.name,
                    name,
                    sorted(self.servers),
                )
        if self.bounded:  # a child of a subagent: only the servers its parent uses
            above = {s.name for s in self.ceiling.servers} if self.ceiling is not None else set()
            chosen = {n: s for n, s in chosen.items() if n in above}
        whole = {n for n in inline}
        for name, cfg in defined.items():
            chosen[name] = NamedServer(name, cfg)
        if not chosen:
            return None
        removed = [n for n in getattr(spec, "removed_tools", ()) if is_mcp_name(n)]
        return McpExtension(
            self,
            list(chosen.values()),
            entries,
            whole=whole,
            removed=removed,
            ceiling=self.ceiling,
            own=set(defined),
        )

    def tools_of(self, server: NamedServer, listing: list[Any]) -> list[Tool]:
        """The Tool objects of ``server``'s listing, built once per listing."""
        slot = (server.name, server.fingerprint)
        cached = self._tools.get(slot)
        if cached is not None and cached[0] == id(listing):
            return cached[1]
        built = build_tools(self.pool, server, listing)
        self._tools[slot] = (id(listing), built)
        return built

    async def aclose(self) -> None:
        await self.pool.aclose()


@dataclass
class _CallNotes:
    unavailable: dict[str, str] = field(default_factory=dict)


class McpExtension(Extension):
    """Offers the selected MCP tools to one agent's calls (see the module docstring)."""

    def __init__(
        self,
        toolset: McpToolset,
        servers: Sequence[NamedServer],
        entries: Sequence[str] | None,
        *,
        whole: set[str] | frozenset[str] = frozenset(),
        removed: Sequence[str] = (),
        ceiling: McpExtension | None = None,
        own: set[str] | frozenset[str] = frozenset(),
    ) -> None:
        self.toolset, self.servers, self.entries, self.whole = toolset, servers, entries, whole
        self.removed = list(removed)  # ``disallowedTools`` MCP entries: never offered
        #: The parent agent's MCP extension: of its servers, only the tools it offers are offered
        #: here (``own``: the servers this agent's spec defines inline, not bounded by it).
        self.ceiling, self.own = ceiling, own

    def offers(self, server: str, tool_name: str) -> bool:
        """Whether this extension offers ``tool_name`` of ``server`` (when it is listed)."""
        if server not in {s.name for s in self.servers}:
            return False
        entries = None if server in self.whole else self.entries
        if not selects(entries, server, tool_name):
            return False
        if self.removed and selects(self.removed, server, tool_name):
            return False
        return self._within(server, tool_name)

    def _within(self, server: str, tool_name: str) -> bool:
        """Whether the parent's extension (if any) allows ``tool_name`` of ``server``."""
        if self.ceiling is None or server in self.own:
            return True
        return self.ceiling.offers(server, tool_name)

    async def prepare(self, scope: CallScope) -> None:
        notes = scope.local(self, _CallNotes)
        for server in self.servers:
            try:
                await self.toolset.pool.ensure_listing(server, scope.ctx)
            except ToolError as exc:
                log.warning("%s", exc)
                notes.unavailable[server.name] = str(exc)

    def tools(self, scope: CallScope) -> list[Tool]:
        picked: dict[str, Tool] = {}
        for server in self.servers:
            listing = self.toolset.pool.listing(server)
            if listing is None:
                continue
            for tool in self.toolset.tools_of(server, listing):
                if not self.offers(server.name, tool.name):
                    continue
                if tool.name in picked:
                    log.warning(
                        "MCP tool %s of server %r is left out: another tool already has that name",
                        tool.name,
                        server.name,
                    )
                    continue
                picked[tool.name] = tool
        return list(picked.values())

    def system_prompt(self, scope: CallScope) -> str:
        unavailable = scope.local(self, _CallNotes).unavailable
        if not unavailable:
            return ""
        lines = [f"- {name}: {reason}" for name, reason in unavailable.items()]
        return "## Unavailable MCP servers\nTheir tools are missing in this call:\n" + "\n".join(
            lines
        )

    def hook_servers(self, ctx: RuntimeContext) -> HookServers:
        """This agent's servers for its ``mcp_tool`` hooks (:mod:`.hook_servers`)."""
        return HookServers(self.servers, self.toolset.pool, ctx)

    def works_after_save(self, scope: CallScope) -> bool:
        return False
