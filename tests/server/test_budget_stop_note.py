"""A member's budget stop is one event: the failure its session records (the dashboard's
``budget_stop`` entry) and the ``[budget]`` note its lead reads are the same value, rendered by
the same summary, so they cannot disagree."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.errors import BudgetExceededError
from agentscope_teams.model.base import Usage
from agentscope_teams.store import store_from_url
from agentscope_teams.teams import LocalTeamClient
from agentscope_teams.teams.member.usage import team_budgets, tell_lead

from .harness import Served
from .test_api import Api


async def _spend(store_url: str, org: str, team_id: str, ws: Path) -> None:
    """w1 spends the team's 500 tokens, then its next call is refused and the lead is told."""
    answer = ScriptedModel.text("ok", usage=Usage(input_tokens=400, output_tokens=200))
    ctx = RuntimeContext(session_id="operator", user_id="alice", org_id=org)
    async with store_from_url(store_url) as store:
        client = LocalTeamClient(store, ctx)
        team = await client.get_team(team_id)
        member = team.member("w1")
        assert member is not None
        agent = HarnessAgent("w1", ScriptedModel([answer, "never sent"]), store=store, workspace=ws)
        async with agent:
            with team_budgets(team, member, store):
                await agent.call("go", ctx.with_session(member.session_id))
                with pytest.raises(BudgetExceededError) as caught:
                    await agent.call("go on", ctx.with_session(member.session_id))
        await tell_lead(client, team, member, caught.value)


def test_the_lead_reads_the_budget_stop_the_dashboard_lists(
    served: Served, http: httpx.Client, org: str, tmp_path: Path
) -> None:
    op = Api(http, served.tokens["alice"])
    created = op.ok(
        "POST", "/api/teams",
        {"name": "crew", "members": [{"name": "w1", "spec": "coder"}], "max_tokens": 500}, 201,
    )  # fmt: skip
    team_id = created["team"]["id"]
    anyio.run(_spend, served.store_url, org, team_id, tmp_path / "w1")

    [stop] = [e for e in op.ok("GET", f"/api/teams/{team_id}/errors") if e["kind"] == "budget_stop"]
    summary = f"team:{team_id}: 600 tokens used of 500 tokens, over by 100 tokens"
    assert (stop["who"], stop["summary"]) == ("w1", summary)
    [note] = op.ok("GET", f"/api/teams/{team_id}/inbox/lead")
    assert note["sender"] == "w1"
    assert note["content"] == (
        f"[budget] w1 stopped: budget team:{team_id} is spent ({summary}); raise it or finish "
        "without this member"
    )
