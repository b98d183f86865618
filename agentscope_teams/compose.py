"""The composition root: agents with subagents and teams wired from specs.

:class:`~agentscope_teams.agent.SessionAgent` knows no plug-in. This module, above the agent,
subagent and team layers, is the one place that puts them together:

* :func:`extensions_from_specs` builds the extensions an agent gets from ``specs`` — the subagent
  tools (:class:`~agentscope_teams.subagents.SubagentExtension`) and, for a top-level agent, the
  team lead tools (:class:`~agentscope_teams.teams.TeamLeadExtension`) over the same specs.
* :class:`HarnessAgent` is a ``SessionAgent`` whose constructor also takes ``specs=`` (and the
  subagent and team options) and adds those extensions, and ``mcp_servers=`` (a ``.mcp.json``, a
  directory holding one, or a mapping): the tools of those MCP servers for the agent, and for its
  subagents and team members the MCP tools their spec selects (:mod:`agentscope_teams.mcp`),
  and ``sandbox=``: the shell tools ``bash``, ``bash_output``, ``kill_shell`` running in that
  sandbox (:mod:`agentscope_teams.sandbox`), inherited by its subagents and team members.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from .agent.config import ReActConfig
from .agent.extension import AgentView, Extension
from .agent.harness import SessionAgent
from .errors import ConfigurationError
from .hooks import HookMap, Hooks, hooks_from_callables, parse_hooks, project_hooks
from .hooks.config import merged
from .mcp import McpToolset
from .mcp.project import project_mcp_json, project_servers
from .model.base import ChatModel
from .sandbox import Sandbox, resolve_sandbox
from .sessions import SessionSource
from .skills import SkillExtension, SkillLibrary
from .store.base import BaseStore
from .tools import PermissionEngine, Tool, shell_tools
from .trust import ProjectTrust, project_root
from .usage import Budget, RateLimit, UsageGovernor

__all__ = ["HarnessAgent", "extensions_from_specs", "project_mcp_json"]


def extensions_from_specs(
    agent: AgentView,
    specs: Any,
    *,
    teams: bool | None = None,
    team_options: Mapping[str, Any] | None = None,
    mcp: McpToolset | None = None,
    skills: SkillLibrary | None = None,
    **subagent_options: Any,
) -> list[Extension]:
    """The subagent extension for ``specs`` and, when ``teams`` (default: a top-level agent, depth
    0), a team lead extension whose candidate members are the same specs and models.

    ``subagent_options`` go to :meth:`SubagentExtension.build` (``max_depth``, ``max_concurrent``,
    ``model_aliases``, ``lease_ttl``, ``workspace_root``, ``models``); ``team_options`` to
    :class:`TeamLeadExtension` (``run_members``, ``member_model``, ``task_lease``, ...). With
    ``mcp``, children and members get the MCP tools their spec selects.
    """
    # imported here, when specs are given, so that ``import agentscope_teams`` stays cheap
    from .subagents.extension import SubagentExtension
    from .teams.extension import TeamLeadExtension

    sub = SubagentExtension.build(agent, specs, mcp=mcp, skills=skills, **subagent_options)
    found: list[Extension] = [sub]
    if teams if teams is not None else agent.depth == 0:
        options = {"models": sub.models, "mcp": mcp, "hooks": sub.hooks, **(team_options or {})}
        found.append(TeamLeadExtension(sub.specs, **options))
    return found


def project_skills(specs: Any) -> Path | None:
    """The skills folder of the project a spec directory belongs to: ``<root>/.claude/skills``
    beside ``<root>/.claude/agents``; else None."""
    if not isinstance(specs, str | Path):
        return None
    folder = Path(specs).resolve()
    candidate = folder.parent / "skills"
    return candidate if folder.parent.name == ".claude" and candidate.is_dir() else None


def _code_hooks(hooks: Mapping[str, Any] | None) -> HookMap:
    """The operator's hooks given in code: callables, or entries in Claude Code's shape."""
    if not hooks:
        return {}
    shaped = {
        k: v for k, v in hooks.items() if isinstance(v, list) and v and isinstance(v[0], dict)
    }
    rest = {k: v for k, v in hooks.items() if k not in shaped}
    return merged(parse_hooks(shaped), hooks_from_callables(rest))


class HarnessAgent(SessionAgent):
    """A :class:`SessionAgent` with subagents and teams from ``specs`` (a directory, specs, or a
    mapping of them); see :func:`extensions_from_specs` for ``teams``, ``team_options`` and the
    subagent options. Without ``specs`` it is a plain ``SessionAgent``.

    ``mcp_servers`` adds MCP tools (``mcp__<server>__<tool>``): a path to a ``.mcp.json`` (or a
    directory holding one), a mapping in the same format, or an :class:`~.mcp.McpToolset` shared
    with other agents (then this agent does not stop its servers). When it is not given and
    ``specs`` is a directory, the project's ``.mcp.json`` is used if there is one
    (:func:`project_mcp_json`) and the project is trusted; ``mcp_servers={}`` turns that off.
    ``trust_project`` decides whether the specs' project may start servers (its ``.mcp.json``,
    ``mcpServers`` inline in spec files): ``None`` (default) asks the user's remembered decisions
    (:mod:`agentscope_teams.trust`), ``True``/``False`` answer for this agent without remembering,
    a :class:`~agentscope_teams.trust.ProjectTrust` is used as it is; what was left off is in
    ``self.trust.withheld`` and :meth:`ProjectTrust.notice`. ``mcp_tools`` picks this
    agent's own MCP tools by name (``mcp__<server>__<tool>``, ``mcp__<server>``; default: all);
    its subagents pick theirs in their spec's ``tools:``. ``mcp_options`` go to the
    :class:`~.mcp.McpPool` (``max_live``, ``idle_timeout``, ``call_timeout``, ``startup_timeout``).
    Servers start lazily and stop at :meth:`aclose`.

    ``skills`` gives the agent the ``skill`` tool over Claude Code skill folders
    (``<folder>/<name>/SKILL.md``): a folder, a list of folders, or a :class:`~.skills.SkillLibrary`;
    ``{org}`` and ``{user}`` in a folder name make it per tenant. Default: the project's
    ``.claude/skills`` when ``specs`` is its ``.claude/agents``. Subagents preload the skills their
    spec lists in ``skills:`` from the same folders.

    ``sandbox`` (a :class:`~.sandbox.Sandbox`, ``"bubblewrap"``, ``"unsafe-host"`` or None) adds
    the shell tools ``bash``, ``bash_output`` and ``kill_shell`` running in it; subagents and team
    members built from this agent get them too (their spec's ``tools:`` may pick them). The
    default, ``"auto"``, gives them in a bubblewrap sandbox when a spec lists ``Bash`` (a
    ConfigurationError naming the package where bubblewrap cannot run) and none otherwise.
    Permission modes never turn the sandbox off.


    ``hooks`` are the operator's hooks (:mod:`agentscope_teams.hooks`, ``docs/hooks.md``):
    ``{Event: [(matcher, callable), ...]}`` (a callable gets the event dict and returns None or a
    decision dict) or Claude Code's ``{Event: [{matcher, hooks: [{type: command, ...}]}]}``. The
    project's ``.claude/settings.json`` / ``settings.local.json`` hooks are added when ``specs``
    is a directory of a trusted project (else they are withheld, like its MCP servers)."""

    def __init__(
        self,
        name: str,
        model: str | ChatModel,
        system_prompt: str = "",
        *,
        workspace: Path | str = Path(".agentscope/workspace"),
        workspace_scope: Literal["session", "shared"] = "session",
        specs: Any = None,
        store: BaseStore | str | None = None,
        tools: Iterable[Tool] = (),
        builtin_tools: bool = True,
        config: ReActConfig | None = None,
        permissions: PermissionEngine | None = None,
        extensions: Sequence[Extension] = (),
        replicas: int = 1,
        remote_workspace: bool = False,
        lease_ttl: float = 30.0,
        busy_timeout: float = 60.0,
        session_source: SessionSource = SessionSource.USER,
        depth: int = 0,
        teams: bool | None = None,
        team_options: Mapping[str, Any] | None = None,
        mcp_servers: Any = None,
        mcp_tools: Sequence[str] | None = None,
        mcp_options: Mapping[str, Any] | None = None,
        skills: Any = None,
        trust_project: bool | ProjectTrust | None = None,
        hooks: Mapping[str, Any] | None = None,
        tracer_provider: Any = None,
        sandbox: Sandbox | str | None = "auto",
        # -- budgets and shared rate limits (agentscope_teams.usage) --
        usage: UsageGovernor | None = None,
        budget: Budget | None = None,
        rate_limit: RateLimit | None = None,
        **subagent_options: Any,
    ) -> None:
        self.sandbox = None if sandbox == "auto" else resolve_sandbox(sandbox)
        if self.sandbox is not None:
            tools = [*tools, *shell_tools(self.sandbox)]
        super().__init__(
            name,
            model,
            system_prompt,
            workspace=workspace,
            workspace_scope=workspace_scope,
            store=store,
            tools=tools,
            builtin_tools=builtin_tools,
            config=config,
            permissions=permissions,
            extensions=extensions,
            replicas=replicas,
            remote_workspace=remote_workspace,
            lease_ttl=lease_ttl,
            busy_timeout=busy_timeout,
            tracer_provider=tracer_provider,
            session_source=session_source,
            depth=depth,
            usage=usage,
            budget=budget,
            rate_limit=rate_limit,
        )
        self._owns_mcp = not isinstance(mcp_servers, McpToolset)
        self.trust = (
            mcp_servers.trust
            if isinstance(mcp_servers, McpToolset) and trust_project is None
            else ProjectTrust.of(trust_project)
        )
        if mcp_servers is None:
            found = project_mcp_json(specs)
            mcp_servers = project_servers(found, self.trust) if found is not None else None
        self.mcp = McpToolset.from_config(mcp_servers, trust=self.trust, **(mcp_options or {}))
        if mcp_tools is not None:
            self.mcp.inherited = list(mcp_tools)
        if self.mcp.servers:
            self.extensions.append(self.mcp.extension(mcp_tools))
        self.hooks = Hooks(
            merged(_code_hooks(hooks), project_hooks(specs, self.trust)),
            project_dir=project_root(specs) if isinstance(specs, str | Path) else None,
        )
        self.skills = SkillLibrary.of(project_skills(specs) if skills is None else skills)
        if self.skills and builtin_tools:
            self.extensions.append(SkillExtension(self.skills))
        if specs is not None:
            found_ext = extensions_from_specs(
                self.view,
                specs,
                teams=teams,
                team_options=team_options,
                mcp=self.mcp,
                skills=self.skills,
                hooks=self.hooks,
                trust=self.trust,
                **subagent_options,
            )
            self.extensions += found_ext
            if sandbox == "auto":
                self._sandbox_for_specs(found_ext)
        elif subagent_options or teams or team_options:
            named = sorted(
                {
                    *subagent_options,
                    *(["teams"] if teams else []),
                    *(["team_options"] if team_options else []),
                }
            )
            raise ConfigurationError(f"options {named} need specs=")

    def _sandbox_for_specs(self, found: Sequence[Extension]) -> None:
        """``sandbox="auto"``: a spec that lists ``Bash`` gets it in a bubblewrap sandbox (the
        agent too); where bubblewrap cannot run that is a ConfigurationError naming the package,
        never a silently unsandboxed shell."""
        from .subagents.extension import SubagentExtension

        wanting = sorted(
            name
            for ext in found
            if isinstance(ext, SubagentExtension)
            for name, spec in ext.specs.items()
            if spec.tools is not None and "bash" in spec.tools
        )
        if not wanting:
            return
        try:
            self.sandbox = resolve_sandbox("bubblewrap")
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"specs {', '.join(wanting)} list Bash, which runs only in a sandbox: {exc}. "
                "Or pass sandbox=None to run them without Bash, or sandbox='unsafe-host' to run "
                "commands on this host without isolation"
            ) from exc
        assert self.sandbox is not None
        for shell_tool in shell_tools(self.sandbox):
            if shell_tool.name not in self.view.toolkit:
                self.view.toolkit.register(shell_tool)

    async def aclose(self) -> None:
        """Stop the extensions' background work and the MCP servers this agent started, then
        close the store if this agent created it."""
        try:
            await super().aclose()
        finally:
            if self._owns_mcp:
                await self.mcp.aclose()
