"""Plan approval for a member on the HTTP team client: its ``exit_plan_mode`` sends the plan to the
lead through the control plane, the lead's answer (approvePlan's ``answer_plan``, over HTTP too) is
kept in the store, and the member leaves plan mode; who may ask what is checked by the server."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import TeamError
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.server import ControlPlaneAuthError, ControlPlaneTeamClient
from agentscope_teams.store import store_from_url
from agentscope_teams.teams import Member, MemberBuilder, TeamMessage, TeamRef, TeamRuntime
from agentscope_teams.teams.actor import TeamActor
from agentscope_teams.teams.member.builder import load_pool
from agentscope_teams.teams.member.review import (
    PLAN_REQUEST,
    answer_plan,
    note_prompt,
    request_plan,
)
from agentscope_teams.tools import Toolkit
from agentscope_teams.tools.filesystem import filesystem_tools

from ..teams.helpers import eventually
from ..teams.test_member_modes import SPEC, planner, results_of
from .harness import Served


async def test_a_member_on_the_http_client_gets_its_plan_approved(
    served: Served, org: str, tmp_path: Path
) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "worker.md").write_text(SPEC)
    ws = tmp_path / "ws"
    ws.mkdir()
    async with ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op:
        member = Member(name="p", spec="worker", plan_approval=True)
        team = await op.create_team("crew", members=[member])
        p_token = op.member_tokens[(team.id, "p")]
        lead_token = await op.issue_member_token(team.id, "lead")
    ctx = RuntimeContext(session_id="s", user_id="alice", org_id=org)
    async with (
        store_from_url(served.store_url) as store,  # the member's sessions and leases
        ControlPlaneTeamClient(served.base_url, lead_token) as lead,
        ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op,
        ControlPlaneTeamClient(served.base_url, p_token) as p,
    ):
        model = ScriptedModel(planner)
        builder = MemberBuilder(
            store=store,
            specs=load_pool(tmp_path / "specs"),
            client_factory=lambda _store, _ctx: p,  # the member talks HTTP only
            workspace=ws,
            root=tmp_path,
            model=model,
            toolkit=Toolkit(filesystem_tools()),
        )
        await op.assign_task(team.id, "write out.txt", assignee="p")
        runtime = TeamRuntime(store, lease_ttl=5.0, poll=0.05)
        runtime.watch(TeamRef(ctx, team.id, builder))
        try:
            with anyio.fail_after(30):  # a liveness guard, not a timing threshold

                async def pending() -> bool:
                    member = (await op.get_team(team.id)).member("p")
                    return member is not None and member.plan is not None

                await eventually(pending)
                # the plan is recorded before the lead is messaged about it: its message may come
                # a moment after the record shows the plan
                await eventually(lambda: _plan_requested(lead, team.id))
                assert not results_of(model, "write_file")  # it waits for the lead
                answered = await answer_plan(TeamActor(lead, team.id, "lead"), "p", True, "ok")
                assert answered.status == "approved"
                await eventually(lambda: _wrote(model))
        finally:
            await runtime.aclose()
        (result,) = results_of(model, "write_file")
        assert not result.is_error, result.output
        assert (ws / "out.txt").read_text() == "planned"
        member = (await op.get_team(team.id)).member("p")
        assert member is not None and member.plan is not None
        assert (member.plan.status, member.plan.feedback) == ("applied", "ok")  # in the store


async def _wrote(model: object) -> bool:
    return bool(results_of(model, "write_file"))  # type: ignore[arg-type]


async def _plan_requested(lead: ControlPlaneTeamClient, team_id: str) -> bool:
    inbox = await lead.read_messages(team_id, "lead")
    return any(m.content.startswith(PLAN_REQUEST) for m in inbox)


async def test_a_review_is_recorded_before_its_message_is_sent(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whoever a review's message wakes finds the record it announces: the plan is ``pending``
    when the lead is messaged, and ``approved`` when the member is (so the member's next step
    leaves plan mode)."""
    seen: list[tuple[str, str | None]] = []
    send = TeamActor.send

    async def noting(self: TeamActor, to: str, content: str) -> TeamMessage:
        member = (await self.team()).member("w")  # runs in the server, before the message
        seen.append((to, member.plan.status if member and member.plan else None))
        return await send(self, to, content)

    monkeypatch.setattr(TeamActor, "send", noting)
    async with ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op:
        team = await op.create_team("crew", members=[Member(name="w")])
        w_token = op.member_tokens[(team.id, "w")]
        lead_token = await op.issue_member_token(team.id, "lead")
    async with (
        ControlPlaneTeamClient(served.base_url, w_token) as w,
        ControlPlaneTeamClient(served.base_url, lead_token) as lead,
    ):
        await request_plan(TeamActor(w, team.id, "w"), "my plan")
        await answer_plan(TeamActor(lead, team.id, "lead"), "w", True, "ok")
    assert seen == [("lead", "pending"), ("w", "approved")]


async def test_who_may_change_review_records_over_http(served: Served) -> None:
    async with ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op:
        team = await op.create_team("crew", members=[Member(name="w"), Member(name="v")])
        tokens = {n: op.member_tokens[(team.id, n)] for n in ("w", "v")}
        lead_token = await op.issue_member_token(team.id, "lead")
    async with (
        ControlPlaneTeamClient(served.base_url, tokens["w"]) as w,
        ControlPlaneTeamClient(served.base_url, tokens["v"]) as v,
        ControlPlaneTeamClient(served.base_url, lead_token) as lead,
    ):
        await request_plan(TeamActor(w, team.id, "w"), "my plan")
        with pytest.raises(ControlPlaneAuthError, match="cannot act as 'w'"):
            await request_plan(TeamActor(v, team.id, "w"), "a forged plan")
        with pytest.raises(ControlPlaneAuthError, match="only an operator or the lead"):
            await answer_plan(TeamActor(w, team.id, "w"), "w", True)  # its own plan: no
        rejected = await answer_plan(TeamActor(lead, team.id, "lead"), "w", False, "test first")
        assert (rejected.status, rejected.feedback) == ("rejected", "test first")
        with pytest.raises(TeamError, match="no plan waiting"):
            await answer_plan(TeamActor(lead, team.id, "lead"), "w", True)
        await note_prompt(TeamActor(v, team.id, "v"), "deploy")
        record = (await lead.get_team(team.id)).member("v")
        assert record is not None and record.permission_prompt is not None
        assert record.permission_prompt.tool == "deploy"
