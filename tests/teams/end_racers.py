"""Child processes of the delete races: several processes act on one team at the same instant
(a barrier), each with TaskCompleted hooks logging one JSON line per event to a shared file."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from ..backends import StoreSpec
from ..hooks.racing import BARRIER_WAIT, logging_hooks


def act(spec: StoreSpec, org: str, team_id: str, how: str, log: str, barrier: Any) -> None:
    """``how``: "delete" the team, or "complete:<member>:<task>" (a member finishing its task)."""
    anyio.run(_act, spec, org, team_id, how, Path(log), barrier)


async def _act(spec: StoreSpec, org: str, team_id: str, how: str, log: Path, barrier: Any) -> None:
    from agentscope_teams.context import RuntimeContext
    from agentscope_teams.errors import TeamError
    from agentscope_teams.teams.client import LocalTeamClient

    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=org)
    async with spec.open() as store:
        client = LocalTeamClient(store, ctx, hooks=logging_hooks(log, "TaskCompleted"))
        await client.get_team(team_id)  # connected and warm before the race
        await anyio.to_thread.run_sync(barrier.wait, BARRIER_WAIT)
        # a loser meets the team (or its task) gone: that is its answer, not a failure
        with contextlib.suppress(TeamError):
            if how == "delete":
                await client.delete_team(team_id)
            else:
                _, member, task_id = how.split(":")
                await client.complete_task(team_id, member, task_id, "done")
