"""How workers find teams: the team directory, its modes and org filter, and the worker's options."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.model.scripted import ScriptedModel, ScriptItem
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import (
    LocalTeamClient,
    TeamLeadExtension,
    TeamStatus,
    Worker,
    WorkerConfig,
)
from agentscope_teams.teams.directory import get_record
from agentscope_teams.teams.lifecycle import prune_teams
from agentscope_teams.teams.member.builder import load_pool
from agentscope_teams.teams.member.worker import model_option
from agentscope_teams.usage import Budget

from .helpers import team_id_of
from .scripts import member_model

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def store() -> AsyncIterator[BaseStore]:
    async with store_from_url("memory://") as s:
        yield s


async def lead_team(
    tmp_path: Path, store: BaseStore, ctx: RuntimeContext, mode: Any
) -> tuple[str, TeamLeadExtension]:
    ext = TeamLeadExtension(ROOT / "specs", run_members=mode)
    script: list[ScriptItem] = [
        ScriptedModel.tool_call("createTeam", {"name": "crew", "description": "goal"}),
        "ok",
    ]
    lead = HarnessAgent(
        "lead", ScriptedModel(script), workspace=tmp_path, store=store, extensions=[ext]
    )
    await lead.call("go", ctx)
    return team_id_of(await lead.get_agent_state(ctx)), ext


async def test_workers_find_worker_teams_of_their_orgs_only(
    tmp_path: Path, store: BaseStore
) -> None:
    acme = RuntimeContext(session_id="s", user_id="alice", org_id="acme")
    other = RuntimeContext(session_id="s", user_id="bob", org_id="other")
    local, _ = await lead_team(tmp_path, store, acme, "local")
    remote, _ = await lead_team(tmp_path, store, acme, "workers")
    elsewhere, _ = await lead_team(tmp_path, store, other, "any")
    record = await get_record(store, acme, remote)
    assert record is not None
    assert (record.org_id, record.user_id, record.description) == ("acme", "alice", "goal")
    base = await anyio.Path(tmp_path).resolve()
    assert record.root == str(base) and record.mode == "workers"
    assert record.workspace.startswith(str(base))  # the lead's session directory

    specs = load_pool(ROOT / "specs")
    every = Worker(store, WorkerConfig(specs=specs))
    assert sorted(r.team_id for r in await every.discover()) == sorted([remote, elsewhere])
    only = Worker(store, WorkerConfig(specs=specs, orgs=["acme"]))
    assert [r.team_id for r in await only.discover()] == [remote]
    assert local not in [r.team_id for r in await every.discover()]

    await LocalTeamClient(store, acme).delete_team(remote)  # deleted elsewhere: the record goes
    await only.runtime.step()
    assert await get_record(store, acme, remote) is None
    assert await only.discover() == []


async def test_a_worker_team_records_the_lead_s_budgets_and_a_later_call_s_limits(
    tmp_path: Path, store: BaseStore
) -> None:
    """Members in workers draw on the lead's budgets (as members in the lead's process inherit
    them): createTeam records those in force, a lead call with another limit rewrites them, and
    the worker's refs carry what the record says."""
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
    ext = TeamLeadExtension(ROOT / "specs", run_members="workers")
    script: list[ScriptItem] = [
        ScriptedModel.tool_call("createTeam", {"name": "crew", "description": "goal"}),
        "ok",
        "again",
    ]
    model, name = ScriptedModel(script), "session:acme/alice/s1"

    def lead(max_tokens: int) -> HarnessAgent:
        return HarnessAgent(
            "lead", model, workspace=tmp_path, store=store, extensions=[ext],
            budget=Budget(max_tokens=max_tokens),
        )  # fmt: skip

    first = lead(100_000)
    await first.call("go", ctx)
    team_id = team_id_of(await first.get_agent_state(ctx))
    record = await get_record(store, ctx, team_id)
    assert record is not None and record.budgets == {name: Budget(max_tokens=100_000)}
    worker = Worker(store, WorkerConfig(specs=load_pool(ROOT / "specs")))
    (ref,) = await worker.discover()
    assert ref.budgets == {name: Budget(max_tokens=100_000)}

    await lead(250_000).call("go on", ctx)  # the same lead session, resumed with a larger budget
    record = await get_record(store, ctx, team_id)
    assert record is not None and record.budgets == {name: Budget(max_tokens=250_000)}
    (ref,) = await worker.discover()  # the ref it kept, with the limits the record says now
    assert ref.budgets == {name: Budget(max_tokens=250_000)}


def test_worker_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="max_members"):
        WorkerConfig(specs={}, max_members=0)
    with pytest.raises(ConfigurationError, match=r"python:package\.module:attribute"):
        model_option("python:nothing")
    assert model_option(None) is None
    model = model_option("python:tests.teams.scripts:member_model")
    assert isinstance(model, ScriptedModel) and type(model) is type(member_model())


def test_worker_command_reports_bad_options_in_one_line(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "agentscope_teams.cli", "worker", "--store", "memory://"]
    result = subprocess.run(
        [*cmd, "--max-members", "0"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == ["error: max_members must be >= 1, got 0"], (
        result.stderr
    )


@pytest.mark.parametrize("mode", ["local", "workers"])
async def test_deleting_or_pruning_a_team_removes_its_directory_record(
    tmp_path: Path, store: BaseStore, mode: Any
) -> None:
    """A team deleted by the client (``team delete``, ``team prune``, the HTTP routes) leaves no
    directory record behind: no worker removes a local team's, nor one's when no worker runs."""
    ctx = RuntimeContext(session_id="s", user_id="alice", org_id="acme")
    client = LocalTeamClient(store, ctx)
    deleted, _ = await lead_team(tmp_path, store, ctx, mode)
    await client.delete_team(deleted)
    assert await get_record(store, ctx, deleted) is None

    pruned, _ = await lead_team(tmp_path, store, ctx, mode)
    await client.set_team_status(pruned, TeamStatus.ARCHIVED)
    assert [t.id for t in await prune_teams(client, timedelta(seconds=1), now=far_future())] == [
        pruned
    ]
    assert await get_record(store, ctx, pruned) is None


def far_future() -> datetime:
    return datetime.now(UTC) + timedelta(days=1)
