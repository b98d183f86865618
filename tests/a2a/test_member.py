"""A remote A2A agent as a team member: the team runtime runs the member, whose model claims each
task, has the remote agent (a plain a2a-sdk server in another process) do it, and completes the
task with the answer, or fails it with the reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.keys._family import A2A_REMOTE
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.store.url import store_from_url
from agentscope_teams.teams import LocalTeamClient, MemberBuilder, TaskStatus, TeamRef, TeamRuntime
from agentscope_teams.teams.directory import TeamRuntimeRecord, put_record
from agentscope_teams.teams.member.builder import load_pool, member_session_id

from ..backends import REDIS_URL, unique_namespace
from ..conftest import require_service
from .conftest import KEY
from .helpers import REPO

pytest.importorskip("a2a")
SPEC = """---
description: A remote agent reached over A2A.
a2a:
  url: {url}
  headers: {{X-Api-Key: {key}}}
  poll: 0.1
---
"""


async def run_team(
    tmp_path: Path, url: str, tasks: list[str], store: InMemoryStore | None = None
) -> list[object]:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "remote.md").write_text(SPEC.format(url=url, key=KEY))
    store = store or InMemoryStore()
    ctx = RuntimeContext(session_id="s", user_id="alice", org_id=unique_namespace())
    client = LocalTeamClient(store, ctx)
    builder = MemberBuilder(
        store=store,
        specs=load_pool(folder),
        client_factory=LocalTeamClient,
        workspace=tmp_path,
        root=tmp_path,
        model=ScriptedModel([]),  # the lead's model: never asked (the member has its own)
    )
    runtime = TeamRuntime(store, lease_ttl=5.0, poll=0.05)
    try:
        team = await client.create_team("interop")
        await client.spawn_member(team.id, "r", "remote", member_session_id(team.id, "r"))
        runtime.watch(TeamRef(ctx, team.id, builder))
        ids = [(await client.assign_task(team.id, t, assignee="r")).id for t in tasks]
        with anyio.fail_after(60):  # a liveness guard, not a timing threshold
            while True:
                found = [await client.get_task(team.id, i) for i in ids]
                if all(t.status.finished for t in found):
                    return found
                await anyio.sleep(0.05)
    finally:
        await runtime.aclose()


def test_the_member_completes_tasks_with_the_remote_answers(remote: str, tmp_path: Path) -> None:
    store = InMemoryStore()
    done, failed, asked = anyio.run(run_team, tmp_path, remote, ["hi board", "fail", "ask"], store)
    assert done.status is TaskStatus.COMPLETED and done.result == "remote says: hi board"
    assert failed.status is TaskStatus.FAILED
    assert "'remote'" in (failed.error or "") and "it broke" in (failed.error or "")
    assert asked.status is TaskStatus.FAILED and "What is your name?" in (asked.error or "")
    # the question nobody will answer: its remote task was cancelled, not left waiting for good
    (key,) = anyio.run(store.list_keys, A2A_REMOTE.prefix())
    entry = anyio.run(store.get, key)
    assert entry is not None
    context = json.loads(entry.value)["context_id"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"contextId": context}}
    headers = {"X-Api-Key": KEY, "A2A-Version": "1.0"}
    listed = httpx.post(remote + "/", json=body, headers=headers).json()["result"]["tasks"]
    states = sorted(t["status"]["state"] for t in listed)
    assert "TASK_STATE_INPUT_REQUIRED" not in states and "TASK_STATE_CANCELED" in states, states


@pytest.mark.slow
def test_a_worker_process_runs_the_remote_member(remote: str, tmp_path: Path) -> None:
    """The team is made here (over Redis), the member runs in an `agentscope-teams worker`
    process started without a model: the remote agent is all it needs."""
    require_service("redis")
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "remote.md").write_text(SPEC.format(url=remote, key=KEY))
    org = unique_namespace()
    cmd = [sys.executable, "-m", "agentscope_teams.cli", "worker", "--store", REDIS_URL]
    cmd += ["--specs", str(folder), "--org", org, "--poll", "0.05", "--lease-ttl", "2"]
    log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=log)

    async def lead_side() -> list[Any]:
        async with store_from_url(REDIS_URL) as store:
            ctx = RuntimeContext(session_id="s", user_id="alice", org_id=org)
            client = LocalTeamClient(store, ctx)
            team = await client.create_team("interop")
            record = TeamRuntimeRecord(
                team_id=team.id, org_id=org, user_id="alice", lead="lead", mode="workers"
            )
            await put_record(store, ctx, record)
            await client.spawn_member(team.id, "r", "remote", member_session_id(team.id, "r"))
            ids = [(await client.assign_task(team.id, t, assignee="r")).id for t in ("one", "two")]
            with anyio.fail_after(90):  # a liveness guard, not a timing threshold
                while True:
                    found = [await client.get_task(team.id, i) for i in ids]
                    if all(t.status.finished for t in found):
                        await client.delete_team(team.id)
                        return found
                    await anyio.sleep(0.1)

    try:
        one, two = anyio.run(lead_side)
    finally:
        worker.terminate()
        worker.wait(15)
    assert (one.status, one.result) == (TaskStatus.COMPLETED, "remote says: one")
    assert (two.status, two.result) == (TaskStatus.COMPLETED, "remote says: two")


def test_a_pydantic_ai_agent_served_by_fasta2a_is_a_team_member(
    pydantic_ai_card: str, tmp_path: Path
) -> None:
    """An agent of another framework claims board tasks as any member does."""
    tasks = ["sum the column", "sort the rows"]
    done, again = anyio.run(run_team, tmp_path, pydantic_ai_card, tasks)
    assert (done.status, done.result) == (TaskStatus.COMPLETED, "pydantic-ai heard: sum the column")
    assert (again.status, again.result) == (
        TaskStatus.COMPLETED,
        "pydantic-ai heard: sort the rows",
    )
