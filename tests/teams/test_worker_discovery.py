"""Workers learn of new teams by the store's ``teams-signal`` (memory, Redis, PostgreSQL), not by
scanning the directory every step; without signals the backed-off scan still finds them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio

from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, Worker, WorkerConfig, member_session_id
from agentscope_teams.teams.directory import TeamRuntimeRecord, put_record
from agentscope_teams.teams.member.builder import load_pool

from ..backends import unique_namespace
from .scripts import member_script

SPEC_DIR = Path(__file__).resolve().parents[2] / "specs"


async def _until(check: Callable[[], object]) -> None:
    with anyio.fail_after(30):  # a guard, not a latency assertion
        while not check():  # noqa: ASYNC110 - polls a plain attribute
            await anyio.sleep(0.01)


def _worker(store: BaseStore, tmp_path: Path) -> tuple[Worker, ScriptedModel]:
    model = ScriptedModel(member_script)
    config = WorkerConfig(
        specs=load_pool(SPEC_DIR), model=model, workspace=tmp_path, poll=0.05, scan_every=3600
    )
    return Worker(store, config), model


async def _new_team(store: BaseStore, tmp_path: Path) -> None:
    """A lead elsewhere creates a team run by workers and assigns its member a task."""
    ctx = RuntimeContext(session_id="s", user_id="alice", org_id=unique_namespace())
    lead = LocalTeamClient(store, ctx)
    team = await lead.create_team("found by signal")
    await lead.spawn_member(team.id, "reviewer", "reviewer", member_session_id(team.id, "w"))
    record = TeamRuntimeRecord(
        team_id=team.id, org_id=ctx.org_id, user_id=ctx.user_id, lead="lead", mode="workers"
    )
    await put_record(store, ctx, record)
    await lead.assign_task(team.id, "review", assignee="reviewer")


async def test_a_worker_picks_up_a_new_team_by_signal_not_by_scanning(
    two_stores: tuple[BaseStore, BaseStore], tmp_path: Path
) -> None:
    mine, theirs = two_stores
    worker, model = _worker(mine, tmp_path)
    runtime = worker.runtime
    runtime.start()
    try:
        await _until(lambda: runtime._discover_pushed)  # listening on the teams signal
        settled = runtime.steps + 3
        await _until(lambda: runtime.steps >= settled)  # the scan after listening is done
        scans = runtime.discoveries
        await _new_team(theirs, tmp_path)
        await _until(lambda: model.requests)
        later = runtime.steps + 5
        await _until(lambda: runtime.steps >= later)  # steps go on (poll 0.05 s) without scanning
        assert runtime.discoveries == scans + 1  # the signalled scan; the slow one is an hour away
    finally:
        await worker.aclose()


async def test_without_signals_the_backed_off_scan_finds_a_new_team(tmp_path: Path) -> None:
    store = InMemoryStore()
    store.signals_enabled = False
    worker, model = _worker(store, tmp_path)
    runtime = worker.runtime
    runtime.start()
    try:
        await _until(lambda: runtime.discoveries >= 1)
        await _new_team(store, tmp_path)
        await _until(lambda: model.requests)
        assert not runtime._discover_pushed
    finally:
        await worker.aclose()
