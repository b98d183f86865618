"""The implementations of the lead's tools for one call (see :mod:`.tools` for the schemas)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ...agent.extension import CallScope
from ...errors import ToolError
from ...subagents.child_setup import check_plan_spawn
from ...tools.modes import child_mode
from ...tools.permissions import resolve_mode
from ...trust import ProjectTrust
from ...usage import spent_budget
from .. import lifecycle, summary
from ..actor import TeamActor
from ..member import review
from ..member.usage import lead_budgets, shared_budgets
from ..protocol import TeamClient
from ..results import (
    BoardListing,
    BroadcastSent,
    MemberSpawned,
    MessageSent,
    TaskAssigned,
    TaskBrief,
    TeamCreated,
    TeamDeleted,
    TeamEnded,
    TeamWaited,
)
from ..rules.models import Team
from .state import TeamLeadState

if TYPE_CHECKING:
    from .extension import TeamLeadExtension


class LeadToolCalls:
    """The lead's tools, acting as the lead agent's name in its current (or a named) team."""

    def __init__(self, ext: TeamLeadExtension, scope: CallScope) -> None:
        self.ext, self.scope = ext, scope
        self.client: TeamClient = ext.client(scope)
        self.lead = scope.agent.name

    def team_id(self, team_id: str | None) -> str:
        found = team_id or TeamLeadState.peek(self.scope.state).team_id
        if not found:
            raise ToolError("you have no current team: call createTeam first, or pass team_id")
        return str(found)

    async def led(self, team_id: str | None, *, ended_ok: bool = False) -> str:
        """The team id, if this agent leads that team (only the lead changes its members) and,
        unless ``ended_ok``, the team has not ended."""
        tid = self.team_id(team_id)
        team = await self.client.get_team(tid)
        if team.lead != self.lead:
            raise ToolError(f"team {tid} is led by {team.lead!r}, not by you ({self.lead!r})")
        if not ended_ok:
            self.require_active(team)
        return tid

    @staticmethod
    def require_active(team: Team) -> None:
        if team.status.ended:
            raise ToolError(
                f"team {team.id} has ended ({team.status.value}); its members are stopped. "
                "Call createTeam to start a new team for more work."
            )

    async def active_view(self, team_id: str | None) -> TeamActor:
        """The lead's view of a team that has not ended (a tool error for an ended one)."""
        view = self.view(team_id)
        self.require_active(await view.team())
        return view

    def view(self, team_id: str | None) -> TeamActor:
        return TeamActor(self.client, self.team_id(team_id), self.lead)

    async def create(
        self,
        name: str,
        description: str,
        max_tokens: int | None = None,
        max_budget_usd: float | None = None,
    ) -> TeamCreated:
        team = await self.ext.create_team(
            self.scope,
            self.client,
            name,
            description,
            max_tokens=max_tokens,
            max_budget_usd=max_budget_usd,
        )
        return TeamCreated(
            team_id=team.id, name=team.name, lead=self.lead, specs=list(self.ext.specs)
        )

    async def spawn(
        self,
        name: str,
        spec: str,
        team_id: str | None,
        permission_mode: str | None = None,
        plan_approval: bool = False,
        max_tokens: int | None = None,
        max_budget_usd: float | None = None,
    ) -> MemberSpawned:
        if spec not in self.ext.specs:
            available = ", ".join(self.ext.specs) or "none"
            raise ToolError(f"unknown spec {spec!r}; available specs: {available}")
        tid = await self.led(team_id)
        self._within_own_mode(spec, permission_mode, plan_approval)
        member = await self.ext.spawn_member(
            self.scope,
            self.client,
            tid,
            name,
            spec,
            permission_mode=permission_mode,
            plan_approval=plan_approval,
            max_tokens=max_tokens,
            max_budget_usd=max_budget_usd,
        )
        runs_in = "workers" if self.ext.run_members == "workers" else "local"
        return MemberSpawned(team_id=tid, member=member.name, spec=spec, runs_in=runs_in)

    def _within_own_mode(self, spec: str, permission_mode: str | None, plan_approval: bool) -> None:
        """A mode the lead (a model) gives a member: up to ``acceptEdits`` (how a member, with
        nobody to ask, may write files at all; ``plan``, ``dontAsk`` restrict it), and
        ``bypassPermissions`` only from a lead in that mode itself, so a prompt-injected lead
        cannot spawn a member that runs every command unasked
        (:func:`~agentscope_teams.tools.modes.child_mode`, granter ``"model"``). A lead in plan
        mode spawns only a member that runs in plan mode too, as it spawns subagents
        (:func:`~agentscope_teams.subagents.child_setup.check_plan_spawn`)."""
        asked = resolve_mode(permission_mode) if permission_mode is not None else None
        scope = self.scope  # an unknown mode name above: a ValueError, a tool error
        own = scope.agent.permissions.effective_mode(scope.state.permission_context)
        if asked is not None:
            refusal = child_mode(own, asked, "model", precedence=False).refusal(own)
            if refusal is not None:
                raise ToolError(refusal)
        trust = self.ext.trust or ProjectTrust()
        check_plan_spawn(self.ext.specs[spec], own, trust, asked="plan" if plan_approval else asked)

    async def approve_plan(
        self, member: str, approve: bool, feedback: str, team_id: str | None
    ) -> str:
        tid = await self.led(team_id)
        await review.answer_plan(TeamActor(self.client, tid, self.lead), member, approve, feedback)
        self.ext.changed()
        verdict = "approved" if approve else "rejected"
        return f"You {verdict} the plan of {member}; it was told so and wakes to go on."

    async def delete(self, team_id: str | None) -> TeamDeleted:
        tid = await self.led(team_id, ended_ok=True)
        await self.ext.delete_team(self.scope, self.client, tid)
        return TeamDeleted(team_id=tid)

    async def end(self, team_id: str | None) -> TeamEnded:
        tid = await self.led(team_id, ended_ok=True)
        team = await self.client.get_team(tid)
        if team.status.ended:
            return TeamEnded(team_id=tid, status=team.status.value, already=True)
        # what the end cuts off, for the model that ends it (read before: the members stop now)
        board = await self.client.open_board(tid)
        unfinished = [TaskBrief.of(t) for t in board if not t.status.finished]
        team = await self.ext.end_team(self.scope, self.client, tid)
        return TeamEnded(team_id=tid, status=team.status.value, unfinished=unfinished)

    async def wait(self, timeout_seconds: float, team_id: str | None) -> TeamWaited:
        tid = self.team_id(team_id)
        team = await self.client.get_team(tid)  # unknown team: a tool error now, not at timeout
        result = await summary.wait_for_team(
            self.client, tid, timeout_seconds, self._budget_spent(team)
        )
        tasks = [TaskBrief.of(t) for t in result.tasks]
        ends = not team.status.ended and lifecycle.work_finished(result.tasks)
        return TeamWaited(
            done=result.done,
            seconds=timeout_seconds,
            tasks=tasks,
            ends=ends,
            stopped=result.stopped,
        )

    def _budget_spent(self, team: Team) -> Callable[[], Awaitable[str | None]] | None:
        """What ends a wait early: a budget every member draws on (the lead's, the team's) is
        spent, so no member can work on an open task (None: the team draws on no budget)."""
        budgets = shared_budgets(team, lead_budgets())
        if not budgets:
            return None
        store = self.scope.agent.store

        async def spent() -> str | None:
            found = await spent_budget(budgets, store)
            return None if found is None else found.reason

        return spent

    async def assign(
        self,
        title: str,
        description: str,
        assignee: str | None,
        blocked_by: list[str],
        team_id: str | None,
        result_schema: dict[str, Any] | None = None,
    ) -> TaskAssigned:
        view = await self.active_view(team_id)
        task = await view.assign(
            title, description, assignee, blocked_by, result_schema=result_schema
        )
        self.ext.changed()
        return TaskAssigned(task=TaskBrief.of(task))

    async def list(self, status: str | None, team_id: str | None) -> BoardListing:
        view = self.view(team_id)
        tasks = await view.tasks(summary.parse_status(status))
        return BoardListing.of(tasks, review.member_notes(await view.team()))

    async def send(self, to: str, content: str, team_id: str | None) -> MessageSent:
        msg = await (await self.active_view(team_id)).send(to, content)
        self.ext.changed()
        return MessageSent(to=to, seq=msg.seq)

    async def broadcast(self, content: str, team_id: str | None) -> BroadcastSent:
        sent = await (await self.active_view(team_id)).broadcast(content)
        self.ext.changed()
        return BroadcastSent(recipients=[m.recipient for m in sent], by_lead=True)
