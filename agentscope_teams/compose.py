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

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, Unpack, cast

from .agent.extension import AgentView, Extension
from .agent.harness import SessionAgent
from .agent.options import SessionOptions, check_keywords, check_options, session_options
from .errors import ConfigurationError
from .hooks import HookMap, Hooks, hooks_from_callables, parse_hooks, project_settings
from .hooks.config import merged
from .hooks.settings_rules import settings_permission_rules
from .mcp import McpPool, McpToolset
from .mcp.project import project_mcp_json, project_servers
from .model.base import ChatModel
from .project_memory import ProjectMemory, claude_project
from .sandbox import Sandbox, resolve_sandbox
from .skills import SkillExtension, SkillLibrary
from .subagents.options import SubagentOptions, check_subagent_options
from .tools import shell_tools
from .trust import ProjectTrust, project_root

__all__ = [
    "HarnessAgent",
    "HarnessOptions",
    "McpOptions",
    "ProjectOptions",
    "TeamOptions",
    "extensions_from_specs",
    "project_mcp_json",
]


class TeamOptions(TypedDict, total=False):
    """Whether the agent leads teams (default: a top-level agent with specs) and the options of
    its :class:`~agentscope_teams.teams.TeamLeadExtension` (``run_members``, ``member_model``,
    ``task_lease``, ...; checked against its signature)."""

    teams: bool | None
    team_options: Mapping[str, Any] | None


class McpOptions(TypedDict, total=False):
    """The agent's MCP servers, the tools it picks from them, and the options of their pool
    (:class:`~agentscope_teams.mcp.McpPool`: ``max_live``, ``idle_timeout``, ...)."""

    mcp_servers: Any
    mcp_tools: Sequence[str] | None
    mcp_options: Mapping[str, Any] | None


class ProjectOptions(TypedDict, total=False):
    """What the agent takes from a project: its specs, skills, hooks, whether it is trusted, and
    the sandbox its shell tools run in."""

    specs: Any
    skills: Any
    project_memory: ProjectMemory | Path | str | bool | None
    trust_project: bool | ProjectTrust | None
    hooks: Mapping[str, Any] | None
    sandbox: Sandbox | str | None


class HarnessOptions(
    SessionOptions, SubagentOptions, TeamOptions, McpOptions, ProjectOptions, total=False
):
    """Every keyword option of :class:`HarnessAgent`, by group. A new option goes into its
    group (or a new group listed here); :func:`~.agent.options.check_options` then knows it."""


def extensions_from_specs(
    agent: AgentView,
    specs: Any,
    *,
    teams: bool | None = None,
    team_options: Mapping[str, Any] | None = None,
    mcp: McpToolset | None = None,
    skills: SkillLibrary | None = None,
    hooks: Hooks | None = None,
    trust: ProjectTrust | None = None,
    lease_ttl: float | None = None,
    memory: ProjectMemory | None = None,
    **subagent_options: Unpack[SubagentOptions],
) -> list[Extension]:
    """The subagent extension for ``specs`` and, when ``teams`` (default: a top-level agent, depth
    0), a team lead extension whose candidate members are the same specs and models.

    ``subagent_options`` (:class:`~.subagents.options.SubagentOptions`) go to
    :meth:`SubagentExtension.build` (with ``lease_ttl``, default: the agent's); ``team_options`` to :class:`TeamLeadExtension`
    (``run_members``, ``member_model``, ``task_lease``, ...). Both are checked here: an unknown
    option is an :class:`~agentscope_teams.errors.OptionError`. With ``mcp``, children and members
    get the MCP tools their spec selects; with ``memory`` (the project's CLAUDE.md), children
    get it in their system prompt, as the agent does.
    """
    # imported here, when specs are given, so that ``import agentscope_teams`` stays cheap
    from .subagents.extension import SubagentExtension
    from .teams.lead.extension import TeamLeadExtension

    check_subagent_options("extensions_from_specs", subagent_options)
    check_keywords("team_options", team_options or {}, TeamLeadExtension)
    sub = SubagentExtension.build(
        agent,
        specs,
        mcp=mcp,
        skills=skills,
        hooks=hooks,
        trust=trust,
        lease_ttl=lease_ttl,
        memory=memory,
        **subagent_options,
    )
    found: list[Extension] = [sub]
    if teams if teams is not None else agent.depth == 0:
        options: dict[str, Any] = {"models": sub.models, "mcp": mcp, "hooks": sub.hooks}
        options.update({"trust": sub.trust, "memory": memory, **(team_options or {})})
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


def project_memory(value: Any, specs: Any, trust: ProjectTrust) -> ProjectMemory | None:
    """The ``project_memory=`` option as memory: a :class:`ProjectMemory` as it is, a path (a
    project folder or a memory file) loaded, False none; None: the memory of the project whose
    ``.claude/agents`` ``specs`` is (its own files, not the folders above it nor the user's)."""
    if value is False:
        return None
    if isinstance(value, ProjectMemory):
        return value
    if isinstance(value, str | Path):
        return ProjectMemory.load(value, trust=trust)
    if value is not None and value is not True:
        raise ConfigurationError(
            f"project_memory must be a ProjectMemory, a path, True/None or False, not {value!r}"
        )
    project = claude_project(specs)
    return ProjectMemory.load(project, trust=trust) if project is not None else None


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

    Its keyword options are :class:`HarnessOptions`, by group: :class:`SessionOptions` (those of
    ``SessionAgent``), :class:`SubagentOptions`, :class:`TeamOptions`, :class:`McpOptions` and
    :class:`ProjectOptions`. They are checked when the agent is built: an unknown option
    (``max_dpeth=3``) or one of the wrong type is an :class:`~agentscope_teams.errors.OptionError`
    naming it and the closest known option, a limit out of range a ``ConfigurationError``.

    ``mcp_servers`` adds MCP tools (``mcp__<server>__<tool>``): a path to a ``.mcp.json`` (or a
    directory holding one), a mapping in the same format, or an :class:`~.mcp.McpToolset` shared
    with other agents (then this agent does not stop its servers). When it is not given and
    ``specs`` is a directory, the project's ``.mcp.json`` is used if there is one
    (:func:`project_mcp_json`) and the project is trusted; ``mcp_servers={}`` turns that off.
    ``trust_project`` decides whether the specs' project may start servers (its ``.mcp.json``,
    ``mcpServers`` inline in spec files), run its hooks, and let its spec files raise their agents'
    ``permissionMode`` above the parent's or allow calls with their ``tools:`` patterns
    (:mod:`~agentscope_teams.subagents.grants`): ``None`` (default) asks the user's remembered decisions
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

    ``project_memory`` gives the agent and its subagents the project's instructions, Claude Code's
    ``CLAUDE.md`` files and their ``@path`` imports (:mod:`agentscope_teams.project_memory`): a
    project folder or a memory file, a :class:`~.project_memory.ProjectMemory` (e.g.
    ``ProjectMemory.load(path, parents=True, user="~/.claude")`` for Claude Code's whole lookup,
    or ``ProjectMemory.from_text(...)``), or False for none. Default: the project's own memory
    files when ``specs`` is its ``.claude/agents``. What went wrong reading them (a missing
    import, a cycle, a file cut at the size bound) is in ``self.project_memory.notices``.

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
        **options: Unpack[HarnessOptions],
    ) -> None:
        check_options("HarnessAgent", options, HarnessOptions)
        sandbox = options.get("sandbox", "auto")
        self.sandbox = None if sandbox == "auto" else resolve_sandbox(sandbox)
        session = session_options(options)
        if self.sandbox is not None:
            session["tools"] = [*session.get("tools", ()), *shell_tools(self.sandbox)]
        super().__init__(name, model, system_prompt, **session)
        specs = options.get("specs")
        self._add_mcp(options)
        self._add_settings_rules(specs)
        file_hooks, policy = project_settings(specs, self.trust)
        self.hooks = Hooks(
            merged(_code_hooks(options.get("hooks")), file_hooks),
            project_dir=project_root(specs) if isinstance(specs, str | Path) else None,
            policy=policy,
        )
        self.project_memory = project_memory(options.get("project_memory"), specs, self.trust)
        if self.project_memory:
            self.extensions.append(self.project_memory)
        skills = options.get("skills")
        self.skills = SkillLibrary.of(project_skills(specs) if skills is None else skills)
        if self.skills and options.get("builtin_tools", True):
            self.extensions.append(SkillExtension(self.skills))
        self._add_specs(options)

    def _add_settings_rules(self, specs: Any) -> None:
        """The permission rules of the project's settings files (:mod:`.hooks.settings_rules`)
        join the agent's own, in a new engine (the caller's is not changed); its subagents and
        team members inherit them with the rest."""
        rules = settings_permission_rules(specs, self.trust)
        if not rules:
            return
        engine = self.loop.permissions.with_rules(rules)
        self.loop.permissions = engine
        self.view = dataclasses.replace(self.view, permissions=engine)

    def _add_mcp(self, options: HarnessOptions) -> None:
        """The MCP toolset (:class:`McpOptions`) and the trust deciding the project's servers."""
        servers = options.get("mcp_servers")
        trust_project = options.get("trust_project")
        self._owns_mcp = not isinstance(servers, McpToolset)
        self.trust = (
            servers.trust
            if isinstance(servers, McpToolset) and trust_project is None
            else ProjectTrust.of(trust_project)
        )
        if servers is None:
            found = project_mcp_json(options.get("specs"))
            servers = project_servers(found, self.trust) if found is not None else None
        pool_options = options.get("mcp_options") or {}
        check_keywords("mcp_options", pool_options, McpPool)
        self.mcp = McpToolset.from_config(servers, trust=self.trust, **pool_options)
        mcp_tools = options.get("mcp_tools")
        if mcp_tools is not None:
            self.mcp.inherited = list(mcp_tools)
        if self.mcp.servers:
            self.extensions.append(self.mcp.extension(mcp_tools))

    def _add_specs(self, options: HarnessOptions) -> None:
        """The subagent and team extensions of ``specs`` (:class:`SubagentOptions`,
        :class:`TeamOptions`); those options without ``specs`` are a ConfigurationError."""
        specs = options.get("specs")
        subagent = {k: v for k, v in options.items() if k in SubagentOptions.__annotations__}
        check_subagent_options("HarnessAgent", subagent)
        teams, team_options = options.get("teams"), options.get("team_options")
        if specs is None:
            named = [*subagent, *(["teams"] if teams else [])]
            named += ["team_options"] if team_options else []
            if named:
                raise ConfigurationError(f"options {sorted(named)} need specs=")
            return
        found = extensions_from_specs(
            self.view,
            specs,
            teams=teams,
            team_options=team_options,
            mcp=self.mcp,
            skills=self.skills,
            hooks=self.hooks,
            trust=self.trust,
            memory=self.project_memory,
            **cast(SubagentOptions, subagent),
        )
        self.extensions += found
        if options.get("sandbox", "auto") == "auto":
            self._sandbox_for_specs(found)

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
