"""Shared helpers of the team runtime tests."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import anyio

from agentscope_teams.state import AgentState
from agentscope_teams.teams import LocalTeamClient, MemberStatus
from agentscope_teams.teams.lead_state import TeamLeadState


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await anyio.sleep(0.05)


def team_id_of(state: AgentState) -> str:
    team_id = TeamLeadState.peek(state).team_id
    assert isinstance(team_id, str), state.middle_context
    return team_id


async def lead_messages(client: LocalTeamClient, team_id: str) -> list[tuple[str, str]]:
    """(sender, content) of every message in the lead's inbox."""
    return [(m.sender, m.content) for m in await client.read_messages(team_id, "lead")]


async def members_idle(client: LocalTeamClient, team_id: str) -> None:
    """Wait until no member is in a call (each was called at least once)."""

    async def idle() -> bool:
        team = await client.get_team(team_id)
        return all(m.status is MemberStatus.IDLE for m in team.members)

    await eventually(idle, within=30)
