"""Team members run hooks as the lead's agent does: the project's settings hooks (trusted project)
and their spec's own ``hooks:``, also in an ``agentscope-teams worker`` process (a real one, with
real hook scripts); tool events name the teammate."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient, TaskStatus
from agentscope_teams.teams.directory import TeamRuntimeRecord, put_record
from agentscope_teams.teams.member.builder import member_session_id

from ..backends import REDIS_URL, unique_namespace
from ..conftest import require_service
from ..teams.helpers import eventually
from . import members

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def worker_proc(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def start_worker(
    root: Path, org: str, *, trust: bool, stop_on: str | None = None
) -> subprocess.Popen[bytes]:
    log = (root / "worker.log").open("wb")
    cmd = [sys.executable, "-m", "agentscope_teams.cli", "worker", "--store", REDIS_URL]
    cmd += ["--specs", str(members.project(root, stop_on)), "--org", org, "--poll", "0.05"]
    cmd += ["--lease-ttl", "2", "--model", "python:tests.hooks.members:member_model"]
    cmd += ["--trust-project"] if trust else []
    return subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ), stdout=log, stderr=log)


async def team_for_workers(store: BaseStore, ctx: RuntimeContext, ws: Path) -> tuple[str, str]:
    """A team in the directory for workers, a ``coder`` member and one task for it."""
    client = LocalTeamClient(store, ctx)
    team = await client.create_team("t")
    record = TeamRuntimeRecord(
        team_id=team.id,
        org_id=ctx.org_id,
        user_id=ctx.user_id,
        lead=team.lead,
        mode="workers",
        workspace=str(ws),
        root=str(ws),
    )
    await put_record(store, ctx, record)
    session = member_session_id(team.id, "c")
    await client.spawn_member(team.id, "c", "coder", session, permission_mode="acceptEdits")
    task = await client.assign_task(team.id, "write out.txt", assignee="c")
    return team.id, task.id


@pytest.mark.slow
@pytest.mark.parametrize("trust", [True, False], ids=["trusted", "untrusted"])
async def test_a_worker_run_member_runs_the_project_and_spec_hooks(
    tmp_path: Path, worker_proc: list[subprocess.Popen[bytes]], trust: bool
) -> None:
    require_service("redis")
    from agentscope_teams.store import store_from_url

    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=unique_namespace())
    async with store_from_url(REDIS_URL) as store:
        worker_proc.append(start_worker(tmp_path, ctx.org_id or "", trust=trust))
        team_id, task_id = await team_for_workers(store, ctx, ws)
        client = LocalTeamClient(store, ctx)

        async def done() -> bool:
            return (await client.get_task(team_id, task_id)).status is TaskStatus.COMPLETED

        async def idle_fired() -> bool:  # TeammateIdle, once the member has nothing left
            return any(e["hook_event_name"] == "TeammateIdle" for e in members.events(tmp_path))

        with anyio.fail_after(90):  # a liveness guard, not a timing threshold
            await eventually(done, within=80)
            if trust:
                await eventually(idle_fired, within=30)
        await client.delete_team(team_id)
    assert (ws / "out.txt").read_text() == "written"  # the member worked in the worker
    seen = members.events(tmp_path)
    if not trust:  # the control: an untrusted project's hooks are left off, and said so
        assert seen == [] and not (tmp_path / members.MARK).exists()
        worker_proc[0].kill()
        worker_proc[0].wait(timeout=10)
        assert "not trusted" in (tmp_path / "worker.log").read_text()
        return
    [pre] = [e for e in seen if e["hook_event_name"] == "PreToolUse" and e["tool_name"] == "Write"]
    assert pre["tool_name"] == "Write" and str(pre["tool_input"]["file_path"]).endswith("out.txt")
    assert (pre["teammate_name"], pre["team_name"]) == ("c", team_id)
    [end] = [e for e in seen if e["hook_event_name"] == "TaskCompleted"]
    assert (end["task_id"], end["status"], end["teammate_name"]) == (task_id, "completed", "c")
    assert (tmp_path / members.MARK).exists()  # the spec's own PostToolUse hook ran
    idle = next(e for e in seen if e["hook_event_name"] == "TeammateIdle")
    assert (idle["teammate_name"], idle["team_name"]) == ("c", team_id)


@pytest.mark.slow
async def test_a_task_completed_stop_holds_for_a_member_a_worker_runs(
    tmp_path: Path, worker_proc: list[subprocess.Popen[bytes]]
) -> None:
    """A TaskCompleted hook answering ``continue: false`` (once) in a worker process: the
    completion is refused and the task goes back to pending, the member's record (in the store)
    says it stopped and why, the lead is told; an operator's resume_member in this process lets
    the worker give it work again: it completes both tasks."""
    require_service("redis")
    from agentscope_teams.store import store_from_url

    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=unique_namespace())
    async with store_from_url(REDIS_URL) as store:
        org = ctx.org_id or ""
        worker_proc.append(start_worker(tmp_path, org, trust=True, stop_on="TaskCompleted"))
        team_id, first = await team_for_workers(store, ctx, ws)
        client = LocalTeamClient(store, ctx)

        async def stopped() -> bool:
            found = (await client.get_team(team_id)).member("c")
            return found is not None and found.stop is not None

        async def done(task_id: str) -> bool:
            return (await client.get_task(team_id, task_id)).status is TaskStatus.COMPLETED

        with anyio.fail_after(150):  # a liveness guard, not a timing threshold
            await eventually(stopped, within=80)
            stop = (await client.get_team(team_id)).member("c")
            told = [m.content for m in await client.read_messages(team_id, "lead")]
            back = await client.get_task(team_id, first)
            await client.resume_member(team_id, "c")
            await eventually(lambda: done(first), within=60)  # its task again, now let through
            second = await client.assign_task(team_id, "write out.txt again", assignee="c")
            await eventually(lambda: done(second.id), within=60)
        await client.delete_team(team_id)
    assert back.status is TaskStatus.PENDING and back.owner is None
    assert stop is not None and stop.stop is not None and stop.status.value == "stopped"
    assert (stop.stop.reason, stop.stop.event) == ("tests are red", "TaskCompleted")
    assert [t for t in told if t.startswith("c stopped: tests are red")]


@pytest.mark.slow
async def test_a_member_resumed_with_a_second_task_assigned_while_stopped_completes_both(
    tmp_path: Path, worker_proc: list[subprocess.Popen[bytes]]
) -> None:
    """A worker-run member stopped by a TaskCompleted hook is assigned a second task while stopped,
    then resumed: the worker offers it both (its first back to pending, the new one); its model
    does one task per turn, so it is woken again for the other and completes both."""
    require_service("redis")
    from agentscope_teams.store import store_from_url

    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=unique_namespace())
    async with store_from_url(REDIS_URL) as store:
        worker_proc.append(
            start_worker(tmp_path, ctx.org_id or "", trust=True, stop_on="TaskCompleted")
        )
        team_id, first = await team_for_workers(store, ctx, ws)
        client = LocalTeamClient(store, ctx)

        async def stopped() -> bool:
            found = (await client.get_team(team_id)).member("c")
            return found is not None and found.stop is not None

        async def done() -> bool:
            got = [await client.get_task(team_id, t) for t in (first, second.id)]
            return all(t.status is TaskStatus.COMPLETED for t in got)

        with anyio.fail_after(150):  # a liveness guard, not a timing threshold
            await eventually(stopped, within=80)
            second = await client.assign_task(team_id, "write out.txt again", assignee="c")
            await client.resume_member(team_id, "c")
            await eventually(done, within=80)
        await client.delete_team(team_id)


@pytest.mark.slow
@pytest.mark.parametrize("trust", [True, False], ids=["idle-hooks", "no-hooks"])
async def test_a_worker_run_member_given_two_tasks_at_once_completes_both(
    tmp_path: Path, worker_proc: list[subprocess.Popen[bytes]], trust: bool
) -> None:
    """Two tasks assigned to a worker-run member before it is woken: it is offered both, does one
    per turn (its model's way), and is woken again for the other; with the project's TeammateIdle
    hooks (trusted) and without any hooks."""
    require_service("redis")
    from agentscope_teams.store import store_from_url

    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=unique_namespace())
    async with store_from_url(REDIS_URL) as store:
        client = LocalTeamClient(store, ctx)
        team_id, first = await team_for_workers(store, ctx, ws)
        second = await client.assign_task(team_id, "write out.txt again", assignee="c")
        worker_proc.append(start_worker(tmp_path, ctx.org_id or "", trust=trust))

        async def done() -> bool:
            got = [await client.get_task(team_id, t) for t in (first, second.id)]
            return all(t.status is TaskStatus.COMPLETED for t in got)

        with anyio.fail_after(150):  # a liveness guard, not a timing threshold
            await eventually(done, within=80)
        await client.delete_team(team_id)


async def test_an_in_process_member_runs_the_project_and_spec_hooks(tmp_path: Path) -> None:
    from agentscope_teams import HarnessAgent
    from agentscope_teams.model.base import ModelRequest, ModelResponse
    from agentscope_teams.model.scripted import ScriptedModel
    from agentscope_teams.store import InMemoryStore

    from ..teams.scripts import call

    def lead_script(request: ModelRequest) -> ModelResponse | str:
        done = {r.name for m in request.messages for r in m.tool_results()}
        for name, response in (
            ("createTeam", call("createTeam", name="t")),
            (
                "spawnMember",
                call("spawnMember", name="c", spec="coder", permission_mode="acceptEdits"),
            ),
            ("assignTask", call("assignTask", title="write out.txt", assignee="c")),
            ("waitForTeam", call("waitForTeam", timeout_seconds=60)),
        ):
            if name not in done:
                return response
        return "all done"

    ws = tmp_path / "ws"
    lead = HarnessAgent(
        "lead",
        ScriptedModel(lead_script),
        workspace=ws,
        workspace_scope="shared",
        store=InMemoryStore(),
        specs=members.project(tmp_path),
        trust_project=True,
        team_options={"member_model": ScriptedModel(members.coder), "poll": 0.05},
    )
    ctx = RuntimeContext(session_id="s1", user_id="alice")
    async with lead:
        with anyio.fail_after(60):
            await lead.call("go", ctx)
    seen = members.events(tmp_path)
    [pre] = [e for e in seen if e["hook_event_name"] == "PreToolUse" and e["tool_name"] == "Write"]
    assert pre["teammate_name"] == "c"
    ends = [e for e in seen if e["hook_event_name"] == "TaskCompleted"]
    assert [(e["status"], e["teammate_name"]) for e in ends] == [("completed", "c")]
    assert (tmp_path / members.MARK).exists()
