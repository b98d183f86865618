"""A team run by a real lead (members as loops in its process) shows, over HTTP, every member's
session with its model and tokens, and the team's total."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx

from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import store_from_url

from ..teams.helpers import team_id_of
from ..teams.scripts import SPECS, START, lead_script, member_script
from ..teams.test_runtime import make_lead
from .harness import Served
from .test_api import Api


def test_usage_of_a_team_a_lead_ran(served: Served, http: httpx.Client, tmp_path: Path) -> None:
    alice = Api(http, served.tokens["alice"])
    org = alice.ok("GET", "/api/whoami")["org_id"]
    ctx = RuntimeContext(session_id="s-lead", user_id="alice", org_id=org)

    async def run() -> str:
        lead_model = ScriptedModel(lead_script, name="lead-model")
        member_model = ScriptedModel(member_script, name="member-model")
        async with store_from_url(served.store_url) as store:
            lead, _ = make_lead(tmp_path, store, lead_model, member_model)
            async with lead:
                with anyio.fail_after(60):
                    await lead.call(START, ctx)
                return team_id_of(await lead.get_agent_state(ctx))

    team_id = anyio.run(run)
    usage = alice.ok("GET", f"/api/teams/{team_id}/usage")
    rows = {p["name"]: p for p in usage["participants"]}
    assert (rows["lead"]["session_id"], rows["lead"]["model"]) == ("s-lead", "lead-model")
    for member in SPECS:
        assert rows[member]["session_id"] is not None, member
        assert rows[member]["model"] == "member-model" and rows[member]["requests"] > 0
    assert usage["total"]["requests"] == sum(p["requests"] for p in rows.values())
    listed = {s["session_id"]: s["model"] for s in alice.ok("GET", "/api/sessions")}
    assert {listed[rows[m]["session_id"]] for m in SPECS} == {"member-model"}
