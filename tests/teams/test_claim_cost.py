"""Finding work reads the open tasks, not the board's history: counted reads, no timing.

A board with 200 completed tasks and one open task: a ``claimTask`` tool call and one poll of the
member runtime read a handful of task records, where a scan of the board would read all 201.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.agent.lease import Lease
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import (
    LocalTeamClient,
    Member,
    MemberBuilder,
    TaskStatus,
    TeamKeys,
    TeamMemberExtension,
    TeamRef,
    TeamRuntime,
)
from agentscope_teams.teams.member.builder import load_pool
from agentscope_teams.teams.member.work import find_work

from .helpers import CountingStore

pytestmark = pytest.mark.anyio
SPEC_DIR = Path(__file__).resolve().parents[2] / "specs"
HISTORY = 200
#: Task records one claim or poll may read here: the open task (twice at most) and slack for one more.
FEW = 4


@pytest.fixture
async def counting() -> AsyncIterator[CountingStore]:
    async with store_from_url("memory://") as s:
        yield CountingStore(s)


async def long_board(store: BaseStore, ctx: RuntimeContext, *members: str) -> tuple[str, str]:
    """A team whose board holds HISTORY completed tasks and one pending task (its id returned)."""
    client = LocalTeamClient(store, ctx)
    team = await client.create_team(
        "busy", members=[Member(name=n, spec="reviewer") for n in members]
    )
    for i in range(HISTORY):
        task = await client.assign_task(team.id, f"old {i}")
        await client.claim_task(team.id, members[0], task.id)
        await client.complete_task(team.id, members[0], task.id, "done")
    return team.id, (await client.assign_task(team.id, "the open one")).id


async def claim_tool(
    tmp_path: Path, store: BaseStore, ctx: RuntimeContext, team_id: str, name: str
) -> str:
    """What one ``claimTask()`` call of member ``name`` returns to its model."""
    client = LocalTeamClient(store, ctx)
    ext = TeamMemberExtension(client.as_member(team_id, name))
    ext.team = await client.get_team(team_id)
    model = ScriptedModel([ScriptedModel.tool_call("claimTask", {}), "ok"])
    agent = HarnessAgent(
        name, model, workspace=tmp_path / name, store=store, builtin_tools=False, extensions=[ext]
    )
    await agent.call("work", ctx.with_session(f"s-{name}"))
    (result,) = model.requests[-1].messages[-1].tool_results()
    assert not result.is_error, result.output
    return result.output


async def test_claim_tool_reads_open_tasks_not_the_board(
    tmp_path: Path, counting: CountingStore, alice: RuntimeContext
) -> None:
    store = cast(BaseStore, counting)
    team_id, open_id = await long_board(store, alice, "a", "b")
    tasks = TeamKeys(alice.owner_scope(), team_id).tasks_prefix()

    counting.reset()
    assert (await claim_tool(tmp_path, store, alice, team_id, "a")).startswith(
        f"Claimed task {open_id}"
    )
    assert counting.under(tasks) <= FEW

    counting.reset()  # claiming again returns the task it holds (lease renewed), not another one
    assert (await claim_tool(tmp_path, store, alice, team_id, "a")).startswith(
        f"Claimed task {open_id}"
    )
    assert counting.under(tasks) <= FEW
    held = await LocalTeamClient(store, alice).get_task(team_id, open_id)
    assert (held.owner, held.attempts, held.status) == ("a", 1, TaskStatus.IN_PROGRESS)

    counting.reset()
    text = await claim_tool(tmp_path, store, alice, team_id, "b")
    assert text.startswith("No task is claimable by b right now (1 open tasks are taken")
    assert counting.under(tasks) <= FEW


async def test_runtime_poll_reads_open_tasks_not_the_board(
    tmp_path: Path, counting: CountingStore, alice: RuntimeContext
) -> None:
    store = cast(BaseStore, counting)
    team_id, open_id = await long_board(store, alice, "reviewer")
    client = LocalTeamClient(store, alice)
    team = await client.get_team(team_id)
    work = await find_work(client, team, "reviewer", await client.open_board(team_id), set())
    assert work is not None and open_id in work.prompt  # there is work to find
    other = Lease(store, TeamKeys(alice.owner_scope(), team_id).member_lease("reviewer"), 30.0)
    assert await other.try_acquire()  # another process runs the member: the poll only looks

    builder = MemberBuilder(
        store=store,
        specs=load_pool(SPEC_DIR),
        client_factory=lambda s, ctx: LocalTeamClient(s, ctx),
        workspace=tmp_path,
        root=tmp_path,
        model=ScriptedModel([]),
    )
    ref = TeamRef(alice, team_id, builder)

    async def discover() -> list[Any]:
        return [ref]

    runtime = TeamRuntime(store, poll=60.0, discover=discover)
    try:
        counting.reset()
        await runtime.step()
        keys = TeamKeys(alice.owner_scope(), team_id)
        assert keys.task(open_id) in counting.gets  # it looked at the open task
        assert counting.under(keys.tasks_prefix()) <= FEW
    finally:
        await runtime.aclose()
