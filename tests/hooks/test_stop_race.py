"""SubagentStop is emitted once when several processes recover the same ended run at the same
moment: each reads the record before any of them writes it (a barrier holds the first write), so
only the compare-and-set on the run record (``RunBook.claim_stop``) keeps the others from emitting.
Without it every racer runs the hook (checked by removing it)."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import anyio
import pytest

from agentscope_teams.subagents.runs import RunBook, RunRecord, RunStatus

from ..backends import StoreSpec, make_spec, unique_namespace
from ..conftest import require_service
from . import racing
from .helpers import read_lines

RACERS = 4


@pytest.fixture(params=["file", "redis", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    require_service(request.param)
    return make_spec(request.param, tmp_path)


def _race(spec: StoreSpec, scope: tuple[str, str, str], run_id: str, log: Path) -> list[int]:
    racing.logging_hooks(log, "SubagentStop")  # writes the logging script once, before the race
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(RACERS)
    procs = [
        ctx.Process(target=racing.emit_stop, args=(spec, scope, run_id, str(log), barrier))
        for _ in range(RACERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    return [p.exitcode if p.exitcode is not None else -1 for p in procs]


@pytest.mark.slow
async def test_racing_recoveries_of_one_ended_run_emit_one_subagent_stop(
    shared: StoreSpec, tmp_path: Path
) -> None:
    scope = (unique_namespace(), "alice", "s1")
    rec = RunRecord(
        run_id="r-race1",
        parent_agent="lead",
        spec="rev",
        task="work",
        child_session="child",
        depth=1,
        lease="gone",
        status=RunStatus.LOST,
        error="its process died",
    )
    async with shared.open() as store:
        await RunBook(store, *scope).create(rec)
    log = tmp_path / "stops.jsonl"
    codes = await anyio.to_thread.run_sync(_race, shared, scope, rec.run_id, log)
    assert codes == [0] * RACERS
    stops = [e for e in read_lines(log) if e.get("hook_event_name") == "SubagentStop"]
    assert len(stops) == 1, stops
    assert stops[0]["agent_id"] == rec.run_id and stops[0]["status"] == "lost"
    async with shared.open() as store:
        after = await RunBook(store, *scope).get(rec.run_id)
    assert after is not None and after.stop_emitted
