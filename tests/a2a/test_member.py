"""A remote A2A agent as a team member: the team runtime runs the member, whose model claims each
task, has the remote agent (a plain a2a-sdk server in another process) do it, and completes the
task with the answer, or fails it with the reason."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, MemberBuilder, TaskStatus, TeamRef, TeamRuntime
from agentscope_teams.teams.builder import load_pool, member_session_id

from ..backends import unique_namespace
from .conftest import KEY

pytest.importorskip("a2a")
SPEC = """---
description: A remote agent reached over A2A.
a2a:
  url: {url}
  headers: {{X-Api-Key: {key}}}
  poll: 0.1
---
"""


async def run_team(tmp_path: Path, url: str, tasks: list[str]) -> list[object]:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "remote.md").write_text(SPEC.format(url=url, key=KEY))
    store = InMemoryStore()
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
    done, failed, asked = anyio.run(run_team, tmp_path, remote, ["hi board", "fail", "ask"])
    assert done.status is TaskStatus.COMPLETED and done.result == "remote says: hi board"
    assert failed.status is TaskStatus.FAILED
    assert "'remote'" in (failed.error or "") and "it broke" in (failed.error or "")
    assert asked.status is TaskStatus.FAILED and "What is your name?" in (asked.error or "")
