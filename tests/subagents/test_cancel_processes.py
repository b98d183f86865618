"""Real processes: ``agent_cancel`` from one process stops a run another process executes,
exactly once: the run ends ``cancelled``, its child makes no further model call, its workspace
is removed, the cancelling parent reads ``requested`` and no "lost" or result notice follows."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.subagents import RunBook, RunStatus

from ..backends import StoreSpec, make_spec, unique_namespace
from ..conftest import require_service
from . import cancel_worker
from .helpers import call, eventually, is_dir, last_output, make_parent, runs, spec, with_run

pytestmark = pytest.mark.slow


@pytest.fixture(params=["file", "redis"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    require_service(request.param)
    return make_spec(request.param, tmp_path)


async def test_a_cancel_from_another_process_stops_the_run_once(
    shared: StoreSpec, tmp_path: Path
) -> None:
    org = unique_namespace()
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=org)
    report = tmp_path / "report.json"
    proc = mp.get_context("spawn").Process(
        target=cancel_worker.loop_until_cancelled, args=(shared, str(tmp_path), org, str(report))
    )
    proc.start()
    try:
        async with shared.open() as store:

            async def running() -> bool:
                return [r.status for r in await runs(store, ctx)] == [RunStatus.RUNNING]

            await eventually(running, within=30)
            [before] = await runs(store, ctx)
            assert is_dir(before.workspace)
            cancel = with_run(lambda r: call("agent_cancel", run=r))
            model = ScriptedModel([call("agent_list"), cancel, "asked"])
            other = make_parent(tmp_path, store, model, {}, specs=[spec("rev")], lease_ttl=0.6)
            await other.call("stop it", ctx)
            assert "requested" in last_output(model.requests[2])

            async def cancelled() -> bool:
                return [r.status for r in await runs(store, ctx)] == [RunStatus.CANCELLED]

            await eventually(cancelled, within=30)
            await anyio.to_thread.run_sync(proc.join, 60)
            assert proc.exitcode == 0
            counts = json.loads(report.read_text())
            assert counts["later"] == counts["at_end"] > 0  # the child stopped
            [after] = await runs(store, ctx)
            assert after.error and "agent_cancel" in after.error
            assert not is_dir(after.workspace)
            inbox = RunBook.for_ctx(store, ctx).inbox("lead")
            assert await inbox.unread() == []  # a cancelled run posts no notice
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join(10)
