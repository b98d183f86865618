"""A script whose lead forms a team that runs in its own process, then leaves ``async with lead:``.

Run as ``python tests/teams/exit_repro.py STORE_URL ORG SESSION WORKSPACE``: the lead (a
ScriptedModel) calls createTeam, spawnMember, assignTask and waitForTeam; its member claims and
completes the task. It prints ``exited`` after the ``async with`` block; a process that hangs while
closing the lead never prints it (tests/teams/test_exit.py runs it with a timeout). Running it again
with the same ORG and SESSION continues that session: the lead serves its earlier team again and
forms a second one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.teams import TeamLeadExtension
from agentscope_teams.teams.delivery import TEAM_MESSAGE

SPEC_DIR = Path(__file__).resolve().parents[2] / "specs"
START = "Form a team and review app.py"


def _call(tool: str, /, **kw: Any) -> ModelResponse:
    return ScriptedModel.tool_call(tool, kw)


def lead_script(request: ModelRequest) -> ModelResponse | str:
    prompt = next(m for m in reversed(request.messages) if TEAM_MESSAGE not in m.metadata)
    if prompt.get_text_content() == START:
        return ScriptedModel.tool_calls(
            [
                ("createTeam", {"name": "review", "description": "review app.py"}),
                ("spawnMember", {"name": "reviewer", "spec": "reviewer"}),
                ("assignTask", {"title": "review app.py", "assignee": "reviewer"}),
            ]
        )
    results = prompt.tool_results()
    if results and results[-1].name == "assignTask":
        return _call("waitForTeam", timeout_seconds=60)
    return "The review is done."


def member_script(request: ModelRequest) -> ModelResponse | str:
    results = next((m.tool_results() for m in reversed(request.messages) if m.tool_results()), [])
    if not results or results[-1].name == "completeTask":
        if results:
            return "reviewed"
        return _call("claimTask")
    last = results[-1]
    if last.name == "claimTask" and "Claimed task " in last.output:
        task_id = last.output.split("Claimed task ", 1)[1].split()[0].rstrip(":.,")
        return _call("completeTask", task_id=task_id, result="app.py looks fine")
    return "nothing to do"


async def main(url: str, org: str, session: str, workspace: Path) -> None:
    ext = TeamLeadExtension(SPEC_DIR, member_model=ScriptedModel(member_script))
    lead = HarnessAgent(
        "lead", ScriptedModel(lead_script), workspace=workspace, store=url, extensions=[ext]
    )
    ctx = RuntimeContext(session_id=session, user_id="newcomer", org_id=org)
    async with lead:
        reply = await lead.call(START, ctx)
        print("reply:", reply.get_text_content(), flush=True)
    print("exited", flush=True)


if __name__ == "__main__":
    store_url, org_id, session_id, ws = sys.argv[1:5]
    anyio.run(main, store_url, org_id, session_id, Path(ws))
