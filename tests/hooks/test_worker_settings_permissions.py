"""The deny rules of a project's ``.claude/settings.json`` hold for the team members an
``agentscope-teams worker`` process runs (a real one), as for the lead's own members: the member's
write of a denied file is refused, whatever the trust."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.teams import LocalTeamClient, TaskStatus

from ..backends import REDIS_URL, unique_namespace
from ..conftest import require_service
from ..teams.helpers import eventually
from . import members
from .test_member_hooks import ROOT, team_for_workers

pytestmark = pytest.mark.anyio


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def _start(root: Path, org: str) -> subprocess.Popen[bytes]:
    agents = members.project(root)
    settings_file = root / ".claude" / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["permissions"] = {"deny": ["Write(out.txt)"]}
    settings_file.write_text(json.dumps(settings))
    log = (root / "worker.log").open("wb")
    cmd = [sys.executable, "-m", "agentscope_teams.cli", "worker", "--store", REDIS_URL]
    cmd += ["--specs", str(agents), "--org", org, "--poll", "0.05", "--lease-ttl", "2"]
    cmd += ["--model", "python:tests.hooks.members:member_model"]
    return subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ), stdout=log, stderr=log)


@pytest.mark.slow
async def test_a_worker_run_member_obeys_the_projects_deny_rule(
    tmp_path: Path, worker: list[subprocess.Popen[bytes]]
) -> None:
    require_service("redis")
    from agentscope_teams.store import store_from_url

    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=unique_namespace())
    async with store_from_url(REDIS_URL) as store:
        worker.append(_start(tmp_path, ctx.org_id or ""))
        team_id, task_id = await team_for_workers(store, ctx, ws)
        client = LocalTeamClient(store, ctx)

        async def done() -> bool:
            return (await client.get_task(team_id, task_id)).status is TaskStatus.COMPLETED

        with anyio.fail_after(90):  # a liveness guard, not a timing threshold
            await eventually(done, within=80)
        await client.delete_team(team_id)
    assert not (ws / "out.txt").exists(), "the member wrote a file the project denies"
