"""Building a member: an agent from one of the lead's specs (:func:`~...subagents.spawn.spawn_agent`),
wired to its team.

A member is named after its member name and keeps its conversation in the team's store, under the
lead's (org, user), in the session ``team-<team_id>-<member>`` (the id spawnMember records, so every
process running the member resumes the same session). Its system prompt is the spec's prompt plus a
team preamble; its tools are the spec's tools (picked from ``toolkit``) plus the member tools. Its
workspace is the lead's for ``workspace: shared`` specs, else a directory of its own under ``root``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...agent.config import ReActConfig
from ...agent.harness import SessionAgent
from ...context import RuntimeContext, fit_identifier
from ...hooks import Hooks, hooks_of_spec
from ...model.base import ChatModel
from ...sessions import SessionSource
from ...store.base import BaseStore, path_segment
from ...subagents.pool import specs_from
from ...subagents.remote import member_model  # also remote A2A agents (docs/a2a.md)
from ...subagents.spawn import ModelPool, spawn_agent, spec_permissions
from ...subagents.spec import SubagentSpec, WorkspaceMode
from ...tools import PermissionEngine, Toolkit
from ...trust import ProjectTrust
from ..actor import TeamActor
from ..protocol import TeamClient
from ..rules.models import Member, Team
from .extension import TeamMemberExtension
from .review import MEMBER_UNATTENDED, member_exit_plan_tool

if TYPE_CHECKING:
    from ...mcp import McpToolset
    from ...project_memory import ProjectMemory

ClientFactory = Callable[[BaseStore, RuntimeContext], TeamClient]


def load_pool(specs: Any) -> dict[str, SubagentSpec]:
    """The candidate members: a spec directory, a SpecLoadResult, specs, or a mapping of them."""
    return specs_from(specs)


def member_session_id(team_id: str, member: str) -> str:
    """The deterministic session id of ``member`` in ``team_id`` (a valid id for any valid name)."""
    return fit_identifier(f"team-{team_id}-{member}")


def lead_engine(lead: PermissionEngine | None, member: Member) -> PermissionEngine | None:
    """The lead's engine as ``member`` inherits it: its rules in the mode the lead's session was
    in when it spawned the member (``member.lead_mode``: a lead configured for ``plan`` whose
    plan was approved spawns in ``default``), else as given (a member added without one)."""
    if member.lead_mode is None:
        return lead
    return (lead or PermissionEngine()).in_mode(member.lead_mode)


def member_engine(
    spec: SubagentSpec,
    lead: PermissionEngine | None,
    member: Member,
    trust: ProjectTrust | None = None,
) -> PermissionEngine:
    """The permission engine of ``member``: the lead's rules plus the spec's deny rules, in plan
    mode with ``plan_approval``, else in the member's spawn mode, else the spec's (what ``trust``
    lets its file grant), else the lead's (:func:`~...subagents.spawn.spec_permissions`); an
    "ask" is refused (:mod:`.review`). The lead's mode is the one its session was in at spawn
    (``member.lead_mode``, :func:`lead_engine`)."""
    base = spec_permissions(spec, lead_engine(lead, member), trust) or PermissionEngine()
    mode = "plan" if member.plan_approval else member.permission_mode
    return PermissionEngine(base.rules, mode or base.mode, unattended=MEMBER_UNATTENDED)


@dataclass
class MemberBuilder:
    """Everything needed to build the members of one team in this process."""

    store: BaseStore
    specs: Mapping[str, SubagentSpec]
    client_factory: ClientFactory
    workspace: Path
    root: Path
    model: ChatModel | None = None
    models: dict[str, ChatModel] = field(default_factory=dict)
    toolkit: Toolkit | None = None
    config: ReActConfig | None = None
    permissions: PermissionEngine | None = None
    lease_ttl: float = 30.0
    busy_timeout: float = 60.0
    description: str = ""
    on_change: Callable[[], None] | None = None
    mcp: McpToolset | None = None
    #: The hooks every member runs (the lead's, or a worker's project settings hooks), to which
    #: a member adds its spec's ``hooks:`` when ``trust`` lets them run.
    hooks: Hooks | None = None
    trust: ProjectTrust | None = None
    #: The project's CLAUDE.md memory, in every member's system prompt (Claude Code's teammates
    #: load the project's CLAUDE.md too).
    memory: ProjectMemory | None = None

    def __post_init__(self) -> None:
        self.pool = ModelPool(self.model, self.models)  # shares ``models``: names resolve once

    def problem(self, member: Member) -> str | None:
        """Why this process cannot run ``member`` (unknown spec, no model), or None."""
        spec = self.specs.get(member.spec)
        if spec is None:
            return f"spec {member.spec!r} is not among this process's specs ({sorted(self.specs)})"
        try:
            member_model(self.pool, spec, self.store, self.trust)
        except Exception as exc:
            return f"no model for spec {spec.name!r}: {exc}"
        return None

    def workspace_of(self, ctx: RuntimeContext, team_id: str, member: Member) -> Path:
        spec = self.specs[member.spec]
        if spec.workspace.mode is WorkspaceMode.SHARED:
            return self.workspace
        names = map(path_segment, (*ctx.owner_scope(), team_id, member.name))  # escaped, fitted
        return self.root.joinpath("team-members", *names)

    def build(
        self, ctx: RuntimeContext, team: Team, member: Member
    ) -> tuple[SessionAgent, TeamMemberExtension]:
        """The member's agent and its extension (raises if :meth:`problem` is not None)."""

        spec = self.specs[member.spec]
        view = TeamActor(self.client_factory(self.store, ctx), team.id, member.name)
        trust = self.trust or ProjectTrust()
        engine = member_engine(spec, self.permissions, member, trust)
        ext = TeamMemberExtension(
            view, description=self.description, on_change=self.on_change, engine=engine
        )
        ext.team = team
        toolkit = self.toolkit if self.toolkit is not None else Toolkit()
        if toolkit.get("exit_plan_mode") is not None or member.plan_approval:
            # the plan goes to the lead, not a user; a plan_approval member always has the tool
            # (a worker's toolkit has no plan tools), whatever its spec's tools list
            toolkit = toolkit.without(["exit_plan_mode"])
            ext.extra_tools.append(member_exit_plan_tool(view))
        agent = spawn_agent(
            spec,
            name=member.name,
            model=member_model(self.pool, spec, self.store, self.trust),
            store=self.store,
            toolkit=toolkit,
            config=self.config or ReActConfig(),
            permissions=lead_engine(self.permissions, member),
            engine=engine,
            workspace=self.workspace_of(ctx, team.id, member),
            extensions=[ext, *([self.memory] if self.memory else [])],
            lease_ttl=self.lease_ttl,
            busy_timeout=self.busy_timeout,
            session_source=SessionSource.TEAM,
            mcp=self.mcp,
            trust=trust,
        )
        agent.hooks = hooks_of_spec(self.hooks, spec, trust)
        agent.hook_fields = {"teammate_name": member.name, "team_name": team.id}
        return agent, ext
