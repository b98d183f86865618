"""W3C trace context over the control plane: a task created over HTTP joins the caller's trace."""

from __future__ import annotations

from typing import Any

import httpx
from opentelemetry.trace import get_current_span

from agentscope_teams import RuntimeContext, tracing
from agentscope_teams.server import ControlPlaneTeamClient
from agentscope_teams.store import store_from_url
from agentscope_teams.teams import LocalTeamClient

from ..tracing.helpers import memory_provider
from .harness import Served
from .test_api import Api, make_team

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


async def stored_task(served: Served, org: str, team_id: str, task_id: str) -> Any:
    async with store_from_url(served.store_url) as store:
        client = LocalTeamClient(store, RuntimeContext(session_id="t", user_id="alice", org_id=org))
        return await client.get_task(team_id, task_id)


async def test_a_task_created_over_http_keeps_the_callers_traceparent(
    served: Served, http: httpx.Client, org: str
) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    path = f"/api/teams/{team_id}/tasks"
    traced = op.ok("POST", path, {"title": "a"}, 201, headers={"traceparent": PARENT})
    state = {"traceparent": PARENT, "tracestate": "vendor=x"}
    with_state = op.ok("POST", path, {"title": "b"}, 201, headers=state)
    malformed = op.ok("POST", path, {"title": "c"}, 201, headers={"traceparent": "00-zz-1-01"})
    plain = op.ok("POST", path, {"title": "d"}, 201)

    found = [
        (await stored_task(served, org, team_id, t["id"])).trace_context
        for t in (traced, with_state, malformed, plain)
    ]
    assert found == [{"traceparent": PARENT}, state, None, None]


async def test_the_http_client_sends_the_current_trace_to_the_server(
    served: Served, org: str
) -> None:
    provider, _ = memory_provider()
    async with ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op:
        team = await op.create_team("crew")
        with tracing.invoke_agent("lead", provider=provider, session_id="s1"):
            lead_trace = get_current_span().get_span_context().trace_id
            task = await op.assign_task(team.id, "traced")
        untraced = await op.assign_task(team.id, "untraced")

    stored = await stored_task(served, org, team.id, task.id)
    assert tracing.trace_id_of(stored.trace_context) == f"{lead_trace:032x}"
    assert (await stored_task(served, org, team.id, untraced.id)).trace_context is None
