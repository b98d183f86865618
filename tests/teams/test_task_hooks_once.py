"""TaskCompleted fires once per task end: a repeated cancel or failure (a lead's model cancelling
the same task again, a member retrying a failTask whose first call landed) is an idempotent no-op
on the board, and fires nothing again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.context import RuntimeContext
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
