"""What a wake-up costs: the runtime's step reads the team record once (the board and the inbox
straight from the store), and a member woken again and again for nothing keeps a bounded session
(its idle exchanges compacted, :mod:`agentscope_teams.teams.member.chatter`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, InMemoryStore
from agentscope_teams.teams import LocalTeamClient, MemberBuilder, TeamRef, TeamRuntime
from agentscope_teams.teams.member.builder import load_pool, member_session_id

from ..backends import StoreSpec
from .board_paths import native_spec
from .helpers import SPEC_DIR
from .round_trips import count_round_trips

pytestmark = pytest.mark.anyio


def _runtime(
    store: BaseStore, tmp_path: Path, ctx: RuntimeContext, team_id: str, model: Any
) -> TeamRuntime:
    """A runtime serving ``team_id`` whose supervisor is not started: the test steps it."""
    runtime = TeamRuntime(store, lease_ttl=5.0, poll=30.0)
    builder = MemberBuilder(
        store=store,
        specs=load_pool(SPEC_DIR),
        client_factory=LocalTeamClient,
        workspace=tmp_path,
        root=tmp_path,
        model=model,
    )
    ref = TeamRef(ctx, team_id, builder)
    runtime.refs[ref.key] = ref
    return runtime


async def _calls_end(runtime: TeamRuntime) -> None:
    with anyio.fail_after(10):  # a guard, not a latency assertion
        for slot in list(runtime.slots.values()):
            while slot.busy:  # noqa: ASYNC110 - polls a plain attribute
                await anyio.sleep(0.01)


@pytest.fixture(params=["redis"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    return native_spec(request, tmp_path)


async def test_a_wake_up_step_reads_the_team_record_once(
    store_spec: StoreSpec, tmp_path: Path
) -> None:
    """The step that finds a newly assigned task: one read of the team record, the open board
    (one script per index), the member's cursor and inbox, its lease: six commands, in order."""
    async with store_spec.open() as store:
        ctx = RuntimeContext(session_id="lead", user_id="wake-cost")
        lead = LocalTeamClient(store, ctx)
        team = await lead.create_team("wake")
        await lead.spawn_member(team.id, "reviewer", "reviewer", member_session_id(team.id, "w"))
        runtime = _runtime(store, tmp_path, ctx, team.id, ScriptedModel(lambda _: "done"))
        try:
            await runtime.step()  # nothing to do yet (and the scripts are loaded)
            await lead.assign_task(team.id, "review a.py", assignee="reviewer")
            async with count_round_trips(store) as counter:
                await runtime.step()  # finds the task, takes the lease, launches the call
            # the team record, the open board (pending and held pages), the member's cursor and
            # inbox, its lease (before: the record was read again for the board and the inbox)
            assert counter.seen == ["HMGET", "EVALSHA", "EVALSHA", "HMGET", "XRANGE", "EVALSHA"]
            await _calls_end(runtime)
        finally:
            await runtime.aclose()


async def test_a_member_woken_for_nothing_keeps_a_bounded_session(tmp_path: Path) -> None:
    """Woken six times for tasks it answers with text only, the member's session keeps its
    latest exchanges, not six: the model sees the same few messages at every wake-up."""
    store = InMemoryStore()
    ctx = RuntimeContext(session_id="lead", user_id="wake-chatter")
    lead = LocalTeamClient(store, ctx)
    team = await lead.create_team("wake")
    session = member_session_id(team.id, "w")
    await lead.spawn_member(team.id, "reviewer", "reviewer", session)
    seen: list[int] = []

    def member(request: ModelRequest) -> str:
        seen.append(len(request.messages))
        return "nothing for me"

    runtime = _runtime(store, tmp_path, ctx, team.id, ScriptedModel(member))
    try:
        for i in range(6):
            await lead.assign_task(team.id, f"review {i}.py", assignee="reviewer")
            await runtime.step()
            await _calls_end(runtime)
        (slot,) = runtime.slots.values()
        assert slot.agent is not None
        record = await slot.agent.sessions.get_at(slot.agent.address(ctx.with_session(session)))
    finally:
        await runtime.aclose()
    assert len(seen) == 6
    assert seen[2:] == [seen[1]] * 4, seen  # bounded from the second wake-up on
    # the last two exchanges: the one before is dropped when the next call begins
    assert record is not None and len(record.state.context) == 4
