"""Bounds of the board and the mailbox: absurd numbers and text get a typed error naming the field
and the limit (never an OverflowError), and nothing is written."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import ConfigurationError, LimitError
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.server import schemas
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import (
    LocalTeamClient,
    Member,
    TaskStatus,
    Team,
    TeamLeadExtension,
    TeamRuntime,
    WorkerConfig,
)
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.rules import limits

from .conftest import FakeClock

pytestmark = pytest.mark.anyio
SPEC_DIR = Path(__file__).resolve().parents[2] / "specs"
ABSURD_LEASES = [1e12, 1e300, math.inf, -math.inf, math.nan, 0, -1, limits.MAX_TASK_LEASE + 1]


@pytest.fixture
async def store() -> AsyncIterator[BaseStore]:
    """The in-memory store only: bounds are checked before the store is asked anything."""
    async with store_from_url("memory://") as s:
        yield s


async def crew(client: LocalTeamClient) -> Team:
    return await client.create_team("crew", members=[Member(name="a", spec="worker")])


def _names_field_and_limit(err: LimitError, field: str) -> None:
    assert err.field == field
    assert field in str(err) and f"{err.limit:g}" in str(err), str(err)
    assert isinstance(err, ValueError)  # a tool error for the model, 422 over HTTP


@pytest.mark.parametrize("lease", ABSURD_LEASES)
async def test_absurd_claim_leases_are_refused_and_nothing_is_written(
    client: LocalTeamClient, lease: float
) -> None:
    team = await crew(client)
    task = await client.assign_task(team.id, "t")
    for task_id in (task.id, None):  # named claim and claim_next
        with pytest.raises(LimitError) as err:
            await client.claim_task(team.id, "a", task_id, task_lease=lease)
        _names_field_and_limit(err.value, "lease_seconds")
    assert (await client.get_task(team.id, task.id)).status is TaskStatus.PENDING


@pytest.mark.parametrize("lease", ABSURD_LEASES)
async def test_absurd_renewals_are_refused(client: LocalTeamClient, lease: float) -> None:
    team = await crew(client)
    task = await client.assign_task(team.id, "t")
    claimed = await client.claim_task(team.id, "a", task.id)
    with pytest.raises(LimitError) as err:
        await client.renew_task_lease(team.id, "a", task.id, task_lease=lease)
    _names_field_and_limit(err.value, "lease_seconds")
    assert await client.get_task(team.id, task.id) == claimed


async def test_the_longest_lease_is_accepted(client: LocalTeamClient) -> None:
    team = await crew(client)
    task = await client.assign_task(team.id, "t")
    claimed = await client.claim_task(team.id, "a", task.id, task_lease=limits.MAX_TASK_LEASE)
    assert claimed is not None and claimed.lease_seconds == limits.MAX_TASK_LEASE


async def test_a_stored_absurd_lease_is_refused_on_renewal(
    client: LocalTeamClient, store: BaseStore
) -> None:
    """A record written before the bounds (lease 1e12) fails renewal with a typed error."""
    team = await crew(client)
    task = await client.assign_task(team.id, "t")
    claimed = await client.claim_task(team.id, "a", task.id)
    assert claimed is not None
    key = client._keys(team.id).task(task.id)
    await store.put(key, claimed.model_copy(update={"lease_seconds": 1e12}).to_bytes())
    with pytest.raises(LimitError, match="lease_seconds"):
        await client.renew_task_lease(team.id, "a", task.id)


@pytest.mark.parametrize("attempts", [10**100, 0, -3, limits.MAX_ATTEMPTS + 1])
async def test_absurd_attempt_counts_are_refused(client: LocalTeamClient, attempts: int) -> None:
    team = await crew(client)
    with pytest.raises(LimitError) as err:
        await client.assign_task(team.id, "t", max_attempts=attempts)
    _names_field_and_limit(err.value, "max_attempts")
    assert await client.list_tasks(team.id) == []


async def test_the_board_checks_every_path_itself(store: BaseStore, clock: FakeClock) -> None:
    """Callers other than the client (the runtime, tests) get the same bounds from the board."""
    board = TaskBoard(store, LocalTeamClient(store, RuntimeContext(session_id="s"))._keys("t1"))
    with pytest.raises(LimitError, match="lease_seconds"):
        await board.create("lead", "t", task_lease=math.inf)
    with pytest.raises(LimitError, match="max_attempts"):
        await board.create("lead", "t", max_attempts=10**100)
    with pytest.raises(LimitError, match="lease_seconds"):
        await board.claim_next("a", 1e300)


@pytest.mark.parametrize("name", ["a\x00b", "crew\n", " crew", "", "x" * 257, "bell\x07"])
async def test_team_names_with_control_characters_are_refused(
    client: LocalTeamClient, name: str
) -> None:
    with pytest.raises(ValueError, match="team name"):
        await client.create_team(name)
    assert await client.list_teams() == []


async def test_names_and_texts_of_the_board_are_checked(client: LocalTeamClient) -> None:
    team = await crew(client)
    with pytest.raises(ValueError, match="lead"):
        await client.create_team("c", lead="le\x00ad")
    with pytest.raises(ValueError, match="spec"):
        await client.spawn_member(team.id, "b", "spec\x00")
    with pytest.raises(ValueError, match="title"):
        await client.assign_task(team.id, "two\nlines")
    with pytest.raises(ValueError, match="description"):
        await client.assign_task(team.id, "t", "nul \x00 inside")
    with pytest.raises(LimitError, match="title"):
        await client.assign_task(team.id, "t" * (limits.MAX_TITLE + 1))
    with pytest.raises(LimitError, match="description"):
        await client.assign_task(team.id, "t", "d" * (limits.MAX_TEXT + 1))
    ok = await client.assign_task(team.id, "t", "line one\n\tline two\r\n")
    assert ok.description == "line one\n\tline two\r\n"
    task = await client.claim_task(team.id, "a", ok.id)
    assert task is not None
    with pytest.raises(ValueError, match="result"):
        await client.complete_task(team.id, "a", ok.id, "\x00")
    with pytest.raises(LimitError, match="error"):
        await client.fail_task(team.id, "a", ok.id, "e" * (limits.MAX_TEXT + 1))
    with pytest.raises(LimitError, match="reason"):
        await client.cancel_task(team.id, ok.id, reason="r" * (limits.MAX_TEXT + 1))
    assert (await client.get_task(team.id, ok.id)).status is TaskStatus.IN_PROGRESS


async def test_blocker_lists_are_bounded_and_checked(client: LocalTeamClient) -> None:
    team = await crew(client)
    first = await client.assign_task(team.id, "first")
    with pytest.raises(LimitError) as err:
        await client.assign_task(team.id, "t", blocked_by=[first.id] * (limits.MAX_BLOCKERS + 1))
    _names_field_and_limit(err.value, "blocked_by")
    with pytest.raises(ValueError, match="blocked_by"):
        await client.assign_task(team.id, "t", blocked_by=["t-\x00"])
    assert [t.id for t in await client.list_tasks(team.id)] == [first.id]


async def test_message_content_is_bounded(client: LocalTeamClient) -> None:
    team = await crew(client)
    with pytest.raises(LimitError) as err:
        await client.send_message(team.id, "lead", "a", "m" * (limits.MAX_TEXT + 1))
    _names_field_and_limit(err.value, "content")
    with pytest.raises(ValueError, match="content"):
        await client.broadcast_message(team.id, "lead", "nul \x00")
    with pytest.raises(LimitError, match="limit"):
        await client.read_messages(team.id, "a", limit=10**9)
    assert await client.read_messages(team.id, "a") == []


@pytest.mark.parametrize("lease", [1e12, math.inf, math.nan, 0, -5])
async def test_constructors_refuse_bad_task_leases(store: BaseStore, lease: float) -> None:
    ctx = RuntimeContext(session_id="s")
    for build in (
        lambda: LocalTeamClient(store, ctx, task_lease=lease),
        lambda: TeamLeadExtension(SPEC_DIR, task_lease=lease),
        lambda: WorkerConfig(specs={}, task_lease=lease),
    ):
        with pytest.raises(ConfigurationError, match="task_lease"):
            build()


@pytest.mark.parametrize("seconds", [math.inf, math.nan, 0, -1, 1e300])
async def test_constructors_refuse_bad_durations(store: BaseStore, seconds: float) -> None:
    for field, build in (
        ("lease_ttl", lambda: TeamRuntime(store, lease_ttl=seconds)),
        ("poll", lambda: TeamRuntime(store, poll=seconds)),
        ("poll", lambda: TeamLeadExtension(SPEC_DIR, poll=seconds)),
        ("lease_ttl", lambda: TeamLeadExtension(SPEC_DIR, lease_ttl=seconds)),
        ("lease_ttl", lambda: WorkerConfig(specs={}, lease_ttl=seconds)),
    ):
        with pytest.raises(ConfigurationError, match=field):
            build()
    if seconds != 0:  # idle_release may be 0 (give a lease back at once)
        with pytest.raises(ConfigurationError, match="idle_release"):
            WorkerConfig(specs={}, idle_release=seconds)


@pytest.mark.parametrize(
    ("model", "body"),
    [
        (schemas.Claim, {"lease_seconds": 1e12}),
        (schemas.Claim, {"lease_seconds": "inf"}),
        (schemas.Claim, {"lease_seconds": "nan"}),
        (schemas.Heartbeat, {"lease_seconds": 1e300}),
        (schemas.AssignTask, {"title": "t", "max_attempts": 10**100}),
    ],
)
def test_request_schemas_declare_the_same_bounds(model: type[Any], body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(body)
    props = model.model_json_schema()["properties"]
    field = next(iter(f for f in ("lease_seconds", "max_attempts") if f in props))
    declared = props[field].get("maximum") or props[field]["anyOf"][0]["maximum"]
    assert declared in (limits.MAX_TASK_LEASE, limits.MAX_ATTEMPTS)


async def test_a_model_reads_bound_violations_as_tool_errors(
    tmp_path: Path, store: BaseStore, alice: RuntimeContext
) -> None:
    from agentscope_teams import HarnessAgent

    script = [
        ScriptedModel.tool_call("createTeam", {"name": "bad\x00name"}),
        ScriptedModel.tool_call("createTeam", {"name": "crew"}),
        ScriptedModel.tool_call("assignTask", {"title": "x" * (limits.MAX_TITLE + 1)}),
        "done",
    ]
    model = ScriptedModel(script)
    ext = TeamLeadExtension(SPEC_DIR)
    lead = HarnessAgent("lead", model, workspace=tmp_path / "ws", store=store, extensions=[ext])
    try:
        await lead.call("go", alice)
    finally:
        await ext.aclose()
    answers: list[ToolResultBlock] = [
        r for req in model.requests[1:] for r in req.messages[-1].tool_results()
    ]
    assert [r.is_error for r in answers] == [True, False, True]
    assert "control character" in answers[0].output
    assert f"at most {limits.MAX_TITLE}" in answers[2].output


@pytest.mark.parametrize("lease", ["1e12", "inf", "nan", "0"])
def test_serve_refuses_a_bad_task_lease_in_one_line(tmp_path: Path, lease: str) -> None:
    cmd = [sys.executable, "-m", "agentscope_teams.cli", "serve", "--store", "memory://"]
    result = subprocess.run(
        [*cmd, "--port", "0", "--task-lease", lease],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 1, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --task-lease must be"), result.stderr
    assert "604800" in lines[0]
