"""Exactly-once claims through the control plane: 4 processes x 4 claimers, each with its own token."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from agentscope_teams.server import ControlPlaneTeamClient
from agentscope_teams.teams import Member, TaskStatus

from ..backends import make_spec, unique_namespace
from ..conftest import require_service
from ..teams.workers import run_children
from . import workers
from .harness import Served, serve

PROCS, PER_PROC, TASKS = 4, 4, 100


@pytest.fixture(params=["file", "redis"])
def backend_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    require_service(request.param)
    spec = make_spec(request.param, tmp_path)
    with serve(spec.url, {"op": (unique_namespace(), "alice")}) as served:
        yield served


@pytest.mark.slow
async def test_every_task_is_claimed_exactly_once_over_http(backend_server: Served) -> None:
    names = [[f"w{p}-{i}" for i in range(PER_PROC)] for p in range(PROCS)]
    async with ControlPlaneTeamClient(backend_server.base_url, backend_server.tokens["op"]) as op:
        team = await op.create_team("swarm", members=[Member(name=n) for g in names for n in g])
        ids = [(await op.assign_task(team.id, f"job {i}")).id for i in range(TASKS)]
        args = [
            (backend_server.base_url, team.id, {n: op.member_tokens[(team.id, n)] for n in group})
            for group in names
        ]
        logs = await anyio.to_thread.run_sync(run_children, workers.claim_all_over_http, args)

        claims = [entry for log in logs for entry in log]
        assert Counter(task_id for _, task_id in claims) == Counter(ids)
        owner = {task_id: member for member, task_id in claims}
        for task in await op.list_tasks(team.id):
            assert task.status is TaskStatus.COMPLETED and task.attempts == 1
            assert [e.action for e in task.history] == ["created", "claimed", "completed"]
            assert task.owner == owner[task.id] and task.result == f"done by {task.owner}"
        assert len({member for member, _ in claims}) > PER_PROC  # more than one process won work
        await op.delete_team(team.id)
