"""Building an agent from a spec: the one way subagent children and team members are made.

:func:`spawn_agent` gives a :class:`~agentscope_teams.agent.SessionAgent` the spec's prompt, the
spec's tools picked from a base toolkit (``tools: None`` inherits all of them), the base config with
the spec's ``steps`` as ``max_iters``, and a workspace used as is (``workspace_scope="shared"``).
:class:`ModelPool` resolves a spec's ``model`` once per name, falling back to a default model.
A Claude Code alias (``sonnet``, ``opus``, ``haiku``) that cannot be built (no ``ANTHROPIC_API_KEY``,
no ``anthropic`` extra) falls back to the default model with a warning, so specs written for Claude
Code run on any provider.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agent.config import ReActConfig
from ..agent.extension import Extension
from ..agent.harness import SessionAgent
from ..errors import ConfigurationError, MissingDependencyError, ModelConfigurationError, ToolError
from ..model.base import ChatModel
from ..model.factory import CLAUDE_ALIASES, model_from_spec
from ..sessions import SessionSource
from ..state import PermissionRule
from ..store.base import BaseStore
from ..tools import PermissionEngine, Toolkit
from ..tools.base import Tool
from ..tools.permissions import format_rule, limits_tool, parse_rule, rule_matches
from ..trust import ProjectTrust
from .grants import spec_grants
from .spec import SubagentSpec

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..mcp import McpToolset


class ModelPool:
    """The model of each spec: its ``model`` name resolved once, or ``default`` when it names none.

    ``models`` maps names to model objects (shared clients, scripted tests) before a name is parsed
    as ``"provider:model"``; names resolved later are remembered in the same mapping.
    """

    def __init__(
        self, default: ChatModel | None, models: Mapping[str, ChatModel] | None = None
    ) -> None:
        self.default = default
        # a dict is shared (several pools remember names in one place); other mappings are copied
        self.models: dict[str, ChatModel] = (
            models if isinstance(models, dict) else dict(models or {})
        )

    def for_spec(self, spec: SubagentSpec) -> ChatModel:
        """The model of ``spec``; raises ``ConfigurationError`` when there is none or it is invalid."""
        if spec.model is None:
            if self.default is None:
                raise ConfigurationError(
                    f"spec {spec.name!r} names no model and no default model was given"
                )
            return self.default
        if spec.model not in self.models:
            try:
                self.models[spec.model] = model_from_spec(spec.model)
            except (ModelConfigurationError, MissingDependencyError) as exc:
                if spec.model not in CLAUDE_ALIASES or self.default is None:
                    raise
                log.warning("spec %r: %s; using the parent's model", spec.name, exc)
                return self.default
        return self.models[spec.model]


def restrict_to_rules(
    tools: list[Tool], written: Sequence[str], *, allow: bool = True
) -> list[Tool]:
    """``tools`` with each tool a ``tools:`` entry names with a rule (``Bash(git diff:*)``) limited
    to the calls its rules match: any other call is a tool error naming the rules (Claude Code's
    ``tools: Bash(git diff:*)`` lets the agent run only those commands). A rule limits every tool
    of ours its name stands for that takes that kind of argument (:func:`limits_tool`). With
    ``allow`` (the spec may grant them, :mod:`.grants`) the calls they match run without asking;
    else they ask as the tool's other calls would."""
    rules = [parse_rule(text, "allow") for text in written]
    if not rules:
        return tools
    limited = []
    for tool in tools:
        own = [r for r in rules if limits_tool(r, tool)]
        limited.append(_limited(tool, own, allow) if own else tool)
    return limited


def _limited(tool: Tool, rules: list[PermissionRule], allow: bool) -> Tool:
    allowed = ", ".join(format_rule(r) for r in rules)

    async def call(**arguments: Any) -> Any:
        if not any(rule_matches(rule, tool, arguments) for rule in rules):
            raise ToolError(
                f"this agent may use {tool.name} only for calls matching {allowed}; this call "
                "matches none of them"
            )
        return await tool.func(**arguments)

    if not allow:  # an untrusted project's rules only limit: the calls they match still ask
        return dataclasses.replace(tool, func=call)
    # its rules replace the prompt: a call they allow runs, any other is refused, none asks
    return dataclasses.replace(tool, func=call, requires_confirmation=False)


def spec_permissions(
    spec: SubagentSpec, base: PermissionEngine | None, trust: ProjectTrust | None = None
) -> PermissionEngine | None:
    """The permission engine of an agent built from ``spec``: ``base``'s rules plus the spec's
    ``disallowedTools`` rules (deny), in the spec's ``permissionMode`` (default: ``base``'s).

    The ``tools:`` entries with a rule (``Bash(git diff:*)``) are allow rules too: the calls they
    let the agent make run without asking. As in Claude Code, a parent in ``bypassPermissions``
    or ``acceptEdits`` takes precedence over the spec's ``default`` (a spec's ``plan`` or
    ``dontAsk``, which never ask, still apply: :mod:`agentscope_teams.tools.modes`). A spec file
    of a project that ``trust`` (default: the user's remembered decisions) does not trust grants
    neither a mode above ``base``'s nor those allow rules (:mod:`.grants`).
    """
    deny = [parse_rule(rule, "deny") for rule in spec.deny_rules]
    if not deny and not spec.tool_rules and spec.permission_mode is None:
        return base
    base = base or PermissionEngine()
    grants = spec_grants(spec, base.mode, trust if trust is not None else ProjectTrust())
    allow = [parse_rule(rule, "allow") for rule in spec.tool_rules] if grants.allow else []
    return PermissionEngine([*base.rules, *deny, *allow], mode=grants.mode)


def spawn_agent(
    spec: SubagentSpec,
    *,
    name: str,
    model: ChatModel,
    store: BaseStore,
    toolkit: Toolkit,
    config: ReActConfig,
    permissions: PermissionEngine | None,
    workspace: Path,
    extensions: Sequence[Extension],
    lease_ttl: float,
    busy_timeout: float,
    session_source: SessionSource,
    depth: int = 0,
    mcp: McpToolset | None = None,
    engine: PermissionEngine | None = None,
    trust: ProjectTrust | None = None,
) -> SessionAgent:
    """An agent running ``spec`` as ``name`` in ``workspace``, sharing ``store``; with ``mcp``,
    it also gets the MCP tools the spec selects (:meth:`McpToolset.for_spec`). ``engine``, when
    given, is its permission engine as is (the caller applied :func:`spec_permissions`).
    ``trust`` (default: the user's remembered decisions) decides what a spec file may grant
    beyond ``permissions`` (:mod:`.grants`)."""
    trust = trust if trust is not None else ProjectTrust()
    tools = toolkit.tools() if spec.tools is None else toolkit.subset(spec.tools).tools()
    removed = set(spec.removed_tools)
    parent_mode = (permissions or PermissionEngine()).mode
    tools = restrict_to_rules(
        [t for t in tools if t.name not in removed],
        spec.tool_rules,
        allow=spec_grants(spec, parent_mode, trust).allow,
    )
    mcp_tools = mcp.for_spec(spec) if mcp is not None else None
    if mcp_tools is not None:
        extensions = [*extensions, mcp_tools]
    changes: dict[str, object] = {}
    if spec.turn_limit is not None:
        changes["max_iters"] = spec.turn_limit
    if spec.effort is not None:
        changes["effort"] = spec.effort
    if changes:
        config = config.model_copy(update=changes)
    return SessionAgent(
        name,
        model,
        spec.system_prompt,
        workspace=workspace,
        workspace_scope="shared",
        store=store,
        tools=tools,
        builtin_tools=False,
        config=config,
        permissions=engine or spec_permissions(spec, permissions, trust),
        extensions=extensions,
        lease_ttl=lease_ttl,
        busy_timeout=busy_timeout,
        session_source=session_source,
        depth=depth,
    )
