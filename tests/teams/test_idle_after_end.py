"""A member whose team ends during its call (an operator's `team archive` while it works) is
stopped, not idle: its TeammateIdle hooks do not fire, and a hook that would keep it working
(exit 2) gives it no more turns on the ended team."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio

from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.teams import TeamRef, TeamStatus
from agentscope_teams.teams.member.builder import member_session_id

from ..hooks.test_teammate_idle import Team
from .helpers import eventually
from .scripts import call, step_results

ALWAYS_BLOCK = 'echo "keep working" >&2; exit 2\n'


async def test_a_member_whose_team_ended_meanwhile_does_not_go_idle(tmp_path: Path) -> None:
    team = Team(tmp_path, ALWAYS_BLOCK)
    ended: dict[str, str] = {}

    async def archive_then_finish(request: ModelRequest) -> ModelResponse | str:
        results = step_results(request)
        if not results:
            return call("listTasks")  # a member tool: it waits for the call's "running" write
        if "team" not in ended:
            team_id = (await team.client.list_teams())[0].id
            await team.client.set_team_status(team_id, TeamStatus.ARCHIVED)  # an operator
            ended["team"] = team_id
        return "I stop here."

    team.model = ScriptedModel(archive_then_finish)
    team.builder = dataclasses.replace(team.builder, model=team.model)
    created = await team.client.create_team("t")
    session = member_session_id(created.id, "c")
    await team.client.spawn_member(created.id, "c", "coder", session, permission_mode="acceptEdits")
    await team.client.send_message(created.id, "lead", "c", "look at the logs")  # wakes it

    team.runtime.watch(TeamRef(team.ctx, created.id, team.builder))
    try:
        with anyio.fail_after(30):
            await eventually(lambda: _has_ended(ended))
            await anyio.sleep(1.0)  # the runtime's later steps (poll 0.05 s) see the end
    finally:
        await team.runtime.aclose()
    fired = team.log.read_text() if team.log.exists() else ""
    assert "TeammateIdle" not in fired, fired  # stopped, not idle: no TeammateIdle
    assert len(team.model.requests) == 2  # and no turn more on the ended team


async def _has_ended(ended: dict[str, str]) -> bool:
    return "team" in ended
