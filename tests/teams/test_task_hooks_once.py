"""TaskCompleted fires once per task end: a repeated cancel or failure (a lead's model cancelling
the same task again, a member retrying a failTask whose first call landed) is an idempotent no-op
on the board, and fires nothing again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import UnknownTeamError
from agentscope_teams.hooks import Hooks, hooks_from_callables
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient, Member

pytestmark = pytest.mark.anyio


def counting(seen: list[dict[str, Any]], tmp_path: Path) -> Hooks:
    def record(payload: dict[str, Any]) -> None:
        seen.append(payload)

    return Hooks(hooks_from_callables({"TaskCompleted": [record]}), project_dir=tmp_path)


async def test_a_repeated_cancel_or_failure_fires_task_completed_once(
    store: BaseStore, alice: RuntimeContext, tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []
    client = LocalTeamClient(store, alice, hooks=counting(seen, tmp_path))
    team = await client.create_team("t", members=[Member(name="a", spec="w")])
    cancelled = await client.assign_task(team.id, "dropped")
    failed = await client.assign_task(team.id, "fails")
    await client.claim_task(team.id, "a", failed.id)
    for _ in range(2):
        await client.cancel_task(team.id, cancelled.id, reason="not needed")
        await client.fail_task(team.id, "a", failed.id, "broken")
    ends = sorted((p["task_id"], p["status"]) for p in seen)
    assert ends == sorted([(cancelled.id, "cancelled"), (failed.id, "failed")]), ends


async def test_deleting_a_team_ends_its_open_tasks_once(
    store: BaseStore, alice: RuntimeContext, tmp_path: Path
) -> None:
    """Every TaskCreated has its TaskCompleted: a task still pending or in progress when its team
    is deleted ends then (cancelled, the reason saying so), once."""
    seen: list[dict[str, Any]] = []
    client = LocalTeamClient(store, alice, hooks=counting(seen, tmp_path))
    team = await client.create_team("t", members=[Member(name="a", spec="w")])
    done = await client.assign_task(team.id, "done")
    held = await client.assign_task(team.id, "held")
    pending = await client.assign_task(team.id, "pending")
    await client.claim_task(team.id, "a", done.id)
    await client.complete_task(team.id, "a", done.id, "ok")
    await client.claim_task(team.id, "a", held.id)
    await client.delete_team(team.id)
    with pytest.raises(UnknownTeamError):
        await client.delete_team(team.id)  # gone: nothing more ends
    ends = sorted((p["task_id"], p["status"]) for p in seen)
    assert ends == sorted(
        [(done.id, "completed"), (held.id, "cancelled"), (pending.id, "cancelled")]
    ), ends
    held_end = next(p for p in seen if p["task_id"] == held.id)
    assert held_end["teammate_name"] == "a"
