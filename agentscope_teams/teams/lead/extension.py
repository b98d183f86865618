"""Agent Teams as :class:`~agentscope_teams.agent.extension.Extension` s of an agent.

:class:`TeamLeadExtension` makes an agent a team lead::

    lead = HarnessAgent("lead", model, extensions=[TeamLeadExtension("specs/")])
    await lead.call("Form a team to review src/", ctx)
    await lead.extensions[0].aclose()          # stop the member loops this process runs

Its specs are the candidate members; the model decides the topology with ``createTeam`` and
``spawnMember``. With ``run_members="local"`` (default) the members run in this process
(:class:`~..member.runtime.TeamRuntime`); with ``"workers"`` they run in ``agentscope-teams worker``
processes that find the team in the store (:mod:`..directory`); ``"any"`` lets both compete for them.

What each member runs with is :class:`~..member.extension.TeamMemberExtension` (importable from here
too, as before the split).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...agent.extension import CallScope, Extension, ReadMark
from ...errors import ConfigurationError, UnknownTeamError
from ...hooks import Hooks
from ...message import Msg
from ...model.base import ChatModel
from ...model.factory import resolve_model
from ...store.base import BaseStore
from ...subagents.extension import SubagentExtension
from ...tools import Tool
from .. import delivery, lifecycle
from ..actor import TeamActor
from ..client import LocalTeamClient
from ..delivery import LeadCallData
from ..directory import RunMembers, TeamRuntimeRecord, delete_record, get_record, put_record
from ..member.builder import ClientFactory, MemberBuilder, load_pool, member_session_id
from ..member.extension import TeamMemberExtension
from ..member.runtime import TeamRuntime
from ..member.slot import TeamRef
from ..member.usage import lead_budgets
from ..protocol import TeamClient
from ..rules import limits
from ..rules.models import Member, Team, TeamStatus
from .state import TeamLeadState
from .tools import lead_tools

if TYPE_CHECKING:
    from ...agent.harness import SessionAgent
    from ...context import RuntimeContext
    from ...mcp import McpToolset
    from ...project_memory import ProjectMemory
    from ...trust import ProjectTrust

__all__ = ["TeamLeadExtension", "TeamMemberExtension"]

log = logging.getLogger(__name__)


def _ended(state: TeamLeadState, team_id: str) -> None:
    """Remember that ``team_id`` ended: its late messages are read by the next step."""
    if team_id not in state.ended_teams:
        state.ended_teams = [*state.ended_teams, team_id]


def _default_client(task_lease: float, hooks: Hooks | None = None) -> ClientFactory:
    def make(store: BaseStore, ctx: RuntimeContext) -> TeamClient:
        return LocalTeamClient(store, ctx, task_lease=task_lease, hooks=hooks)

    return make


class TeamLeadExtension(Extension):
    """The team lead tools and the member runtime of one lead agent; see the module docs.

    Leaving ``async with lead:`` (or :meth:`aclose`) always finishes: it returns once the member
    calls this process runs, the runtime's supervisor, listeners and heartbeat have ended, the
    member leases are released and those members marked ``stopped``; no task of the runtime is left.
    Team records and tasks stay in the store: the next process serving the lead's session resumes
    them.
    """

    def __init__(
        self,
        specs: Any = None,
        *,
        run_members: RunMembers = "local",
        member_model: ChatModel | str | None = None,
        models: Mapping[str, ChatModel] | None = None,
        client_factory: ClientFactory | None = None,
        task_lease: float = 60.0,
        lease_ttl: float | None = None,
        poll: float = 0.5,
        idle_release: float = 60.0,
        mcp: McpToolset | None = None,
        hooks: Hooks | None = None,
        trust: ProjectTrust | None = None,
        memory: ProjectMemory | None = None,
    ) -> None:
        if run_members not in ("local", "workers", "any"):
            raise ConfigurationError(f"run_members must be local, workers or any: {run_members!r}")
        task_lease = limits.config_lease(task_lease)
        if lease_ttl is not None:
            lease_ttl = limits.config_seconds(lease_ttl, "lease_ttl")
        poll = limits.config_seconds(poll, "poll")
        idle_release = limits.config_seconds(idle_release, "idle_release", allow_zero=True)
        self.specs = load_pool(specs)
        self.run_members: RunMembers = run_members
        self.member_model = resolve_model(member_model) if member_model is not None else None
        self.models: dict[str, ChatModel] = dict(models or {})
        # TaskCreated / TaskCompleted fire on ``hooks`` in the default client
        self.client_factory = client_factory or _default_client(task_lease, hooks)
        self.lease_ttl, self.poll, self.idle_release = lease_ttl, poll, idle_release
        self.runtime: TeamRuntime | None = None
        self.mcp = mcp  # members get the MCP tools their spec selects
        # members run ``hooks`` and their spec's own ``hooks:`` (when ``trust`` allows them)
        self.hooks, self.trust = hooks, trust
        self.memory = memory  # the project's CLAUDE.md, in every member's system prompt

    @classmethod
    def build(cls, agent: SessionAgent, specs: Any = None, **options: Any) -> TeamLeadExtension:
        """An extension for ``agent``; ``specs`` (and ``models``) default to those of its subagent
        extension, so an agent with subagents can add team tools with one line."""
        sub = next((e for e in agent.extensions if isinstance(e, SubagentExtension)), None)
        if specs is None and sub is not None:
            specs = sub.specs
        if "models" not in options and sub is not None:
            options["models"] = sub.models
        return cls(specs, **options)

    def client(self, scope: CallScope) -> TeamClient:
        return self.client_factory(scope.agent.store, scope.ctx)

    def changed(self) -> None:
        if self.runtime is not None:
            self.runtime.nudge()

    # -- Extension hooks -----------------------------------------------------------------------

    def tools(self, scope: CallScope) -> list[Tool]:
        return lead_tools(self, scope)

    def system_prompt(self, scope: CallScope) -> str:
        pool = "\n".join(f"- {s.name}: {s.description}" for s in self.specs.values()) or "- none"
        current = TeamLeadState.peek(scope.state).team_id
        lines = [
            "## Agent Teams",
            "For work that needs several agents cooperating, form a team: createTeam, then "
            "spawnMember for each member you need, then assignTask (blocked_by orders tasks). "
            "Members claim tasks, message each other and report; waitForTeam returns every "
            "result, and their messages to you appear in your conversation. A team ends "
            "(completed, members stopped, board kept) when you call endTeam, or by itself when "
            "your reply ends with every task finished; deleteTeam also removes its records.",
            "spawnMember's permission_mode sets what a member may do (plan: read-only, "
            "acceptEdits: edits files); with plan_approval it first sends you its plan, which you "
            "answer with approvePlan. Members cannot ask anyone for permission: listTasks shows "
            "the calls they were refused.",
            "Specs you can spawn members from:",
            pool,
        ]
        if current:
            lines.append(f"Your current team: {current}.")
        return "\n".join(lines)

    async def prepare(self, scope: CallScope) -> None:
        """Forget a current team that ended (or was deleted) since the last call: the lead's next
        work starts a new team. An ended team (not a deleted one) is kept in ``ended_teams``
        until the first step read what its members sent the lead after the lead's last look
        (:meth:`inject`): a reply that ends a team may end before every report was read."""
        team_id = TeamLeadState.peek(scope.state).team_id
        if not team_id:
            return
        try:
            ended = (await self.client(scope).get_team(team_id)).status.ended
            deleted = False
        except UnknownTeamError:
            ended = deleted = True
        if ended:
            state = TeamLeadState.of(scope.state)
            state.team_id = None
            if not deleted:
                _ended(state, team_id)
        elif self.run_members != "local":
            await self._record_budgets(scope, team_id)

    async def _record_budgets(self, scope: CallScope, team_id: str) -> None:
        """Keep the budgets of the team's directory record those in force for this call (a lead
        resumed with another limit), for the members other processes run; a call with none
        leaves them."""
        budgets = lead_budgets()
        if not budgets:
            return
        store = scope.agent.store
        record = await get_record(store, scope.ctx, team_id)
        if record is not None and record.budgets != budgets:
            await put_record(store, scope.ctx, record.model_copy(update={"budgets": budgets}))

    async def on_reply_end(self, scope: CallScope, final: Msg) -> None:
        """End the current team (``completed``, members stopped) when the reply ends with its
        work finished (:func:`..lifecycle.work_finished`); with open tasks it stays active."""
        team_id = TeamLeadState.peek(scope.state).team_id
        if not team_id:
            return
        client = self.client(scope)
        try:
            team = await client.get_team(team_id)
            if team.lead != scope.agent.name or team.status.ended:
                return
            if await lifecycle.has_open_tasks(client, team_id):
                return
            if lifecycle.work_finished(await client.list_tasks(team_id)):
                await self.end_team(scope, client, team_id)
        except UnknownTeamError:
            return

    async def inject(self, scope: CallScope) -> list[Msg]:
        """The unread messages of the current team; first, once, those of the team that ended
        since the last call (:meth:`prepare`), shown as late messages of an ended team."""
        late = await self._late(scope)
        team_id = TeamLeadState.peek(scope.state).team_id
        if not team_id:
            return late
        client = self.client(scope)
        data = scope.local(self, LeadCallData)
        try:
            if self.run_members != "workers" and not self._watching(scope, team_id):
                await self._watch(scope, client, team_id)
            view = data.views[team_id] = TeamActor(client, team_id, scope.agent.name)
            mark = data.marks.setdefault(team_id, ReadMark())
            return late + await delivery.take(view, mark, scope.state)
        except UnknownTeamError:
            TeamLeadState.of(scope.state).team_id = None
            return late

    async def _late(self, scope: CallScope) -> list[Msg]:
        """The unread messages of the teams the lead led that ended (``ended_teams``), read once:
        the ids are cleared in the state saved with them, and :meth:`after_save` acknowledges
        them (a crash before the save reads them again). An ended team takes no more messages
        (:meth:`~..client.LocalTeamClient.send_message` refuses them), so these are all."""
        ended = TeamLeadState.peek(scope.state).ended_teams
        if not ended:
            return []
        TeamLeadState.of(scope.state).ended_teams = []
        data, client, late = scope.local(self, LeadCallData), self.client(scope), []
        for team_id in ended:
            view = data.views[team_id] = TeamActor(client, team_id, scope.agent.name)
            mark = data.marks.setdefault(team_id, ReadMark())
            try:
                late += await delivery.take(view, mark, scope.state, ended=True)
            except UnknownTeamError:  # deleted since: nothing of it is left to read
                data.views.pop(team_id, None)
        return late

    async def after_save(self, scope: CallScope) -> None:
        data = scope.local(self, LeadCallData)
        for team_id, view in data.views.items():
            try:
                await delivery.acknowledge(view, data.marks[team_id])
            except UnknownTeamError:
                continue

    def works_after_save(self, scope: CallScope) -> bool:
        """Only when this call read team messages it has not acknowledged yet."""
        marks = scope.local(self, LeadCallData).marks.values()
        return any(mark.to_acknowledge() is not None for mark in marks)

    async def on_session_deleted(self, store: BaseStore, ctx: RuntimeContext, agent: str) -> None:
        """The lead's session is gone: end the teams it led that are still active
        (:func:`..lifecycle.end_session_teams`); this process stops serving them."""
        for team in await lifecycle.end_session_teams(
            self.client_factory(store, ctx), store, ctx, agent
        ):
            if self.runtime is not None:
                await self.runtime.stop_team(ctx, team.id)

    async def aclose(self) -> None:
        """Stop the member loops this process runs (their leases are released)."""
        if self.runtime is not None:
            await self.runtime.aclose()

    # -- team operations (used by the lead's tools) ----------------------------------------------

    async def create_team(
        self,
        scope: CallScope,
        client: TeamClient,
        name: str,
        description: str,
        *,
        max_tokens: int | None = None,
        max_budget_usd: float | None = None,
    ) -> Team:
        team = await client.create_team(
            name,
            lead=scope.agent.name,
            description=description,
            max_tokens=max_tokens,
            max_budget_usd=max_budget_usd,
        )
        record = TeamRuntimeRecord(
            team_id=team.id,
            org_id=scope.ctx.org_id,
            user_id=scope.ctx.user_id,
            lead=team.lead,
            lead_session=scope.ctx.session_id,
            description=description,
            mode=self.run_members,
            workspace=str(scope.env.workspace),
            root=str(scope.agent.workspace),
            budgets=lead_budgets(),
        )
        await put_record(scope.agent.store, scope.ctx, record)
        TeamLeadState.of(scope.state).team_id = team.id
        return team

    async def spawn_member(
        self,
        scope: CallScope,
        client: TeamClient,
        team_id: str,
        name: str,
        spec: str,
        *,
        permission_mode: str | None = None,
        plan_approval: bool = False,
        max_tokens: int | None = None,
        max_budget_usd: float | None = None,
    ) -> Member:
        """Add the member; its record keeps the mode the lead's session is in now (``lead_mode``),
        the mode it inherits from the lead wherever it is built."""
        lead_mode = scope.agent.permissions.effective_mode(scope.state.permission_context)
        member = await client.spawn_member(
            team_id,
            name,
            spec,
            member_session_id(team_id, name),
            permission_mode=permission_mode,
            plan_approval=plan_approval,
            max_tokens=max_tokens,
            max_budget_usd=max_budget_usd,
            lead_mode=lead_mode,
        )
        if self.run_members != "workers":
            await self._watch(scope, client, team_id)
        self.changed()
        return member

    async def end_team(self, scope: CallScope, client: TeamClient, team_id: str) -> Team:
        """Mark the team ``completed`` (members stopped, records kept) and stop serving it."""
        if self.runtime is not None:
            await self.runtime.stop_team(scope.ctx, team_id)
        # workers stop looking for it: an end takes it out of the directory (set_team_status)
        team = await client.set_team_status(team_id, TeamStatus.COMPLETED)
        # what reached the lead since its last look is read by the next step, also when a new
        # team is current by then (createTeam in the same step)
        _ended(TeamLeadState.of(scope.state), team_id)
        return team

    async def delete_team(self, scope: CallScope, client: TeamClient, team_id: str) -> None:
        if self.runtime is not None:
            await self.runtime.stop_team(scope.ctx, team_id)
        await client.delete_team(team_id)
        await delete_record(scope.agent.store, scope.ctx, team_id)
        if TeamLeadState.peek(scope.state).team_id == team_id:
            TeamLeadState.of(scope.state).team_id = None

    def _watching(self, scope: CallScope, team_id: str) -> bool:
        return self.runtime is not None and self.runtime.watching(scope.ctx, team_id)

    async def _watch(self, scope: CallScope, client: TeamClient, team_id: str) -> None:
        """Serve the team's members in this process (again, after a restart of the lead)."""
        await client.get_team(team_id)
        agent, store = scope.agent, scope.agent.store
        if self.runtime is None:
            ttl = self.lease_ttl or agent.lease_ttl
            self.runtime = TeamRuntime(
                store, lease_ttl=ttl, poll=self.poll, idle_release=self.idle_release
            )
        record = await get_record(store, scope.ctx, team_id)
        builder = MemberBuilder(
            store=store,
            specs=self.specs,
            client_factory=self.client_factory,
            workspace=Path(record.workspace) if record else scope.env.workspace,
            root=Path(record.root) if record else agent.workspace,
            model=self.member_model or agent.model,
            models=self.models,
            toolkit=agent.toolkit,
            config=agent.config,
            permissions=agent.permissions,
            lease_ttl=self.runtime.lease_ttl,
            busy_timeout=agent.busy_timeout,
            description=record.description if record else "",
            on_change=self.changed,
            mcp=self.mcp,
            hooks=self.hooks,
            trust=self.trust,
            memory=self.memory,
        )
        self.runtime.watch(TeamRef(scope.ctx, team_id, builder))
