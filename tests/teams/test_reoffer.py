"""A member offered several tasks that does one per turn is woken again for the rest; one that
keeps ending its turns without taking a task is woken a bounded number of times, and the lead is
told."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, TaskStatus, member_session_id
from agentscope_teams.teams.member.slot import MAX_REWAKES

from .helpers import eventually, member_runtime, members_idle
from .scripts import CLAIMED, call, step_results

pytestmark = pytest.mark.anyio
DECLINED = "not for me"


def one_task_per_turn(request: ModelRequest) -> ModelResponse | str:
    """Claim one task, complete it, end the turn."""
    results = step_results(request)
    if not results:
        return call("claimTask")
    found = CLAIMED.search(results[-1].output) if results[-1].name == "claimTask" else None
    if found:
        return call("completeTask", task_id=found.group(1), result="done")
    return "done"


async def _team(client: LocalTeamClient, titles: list[str]) -> tuple[str, list[str]]:
    team = await client.create_team("t")
    await client.spawn_member(team.id, "c", "reviewer", member_session_id(team.id, "c"))
    tasks = [await client.assign_task(team.id, title, assignee="c") for title in titles]
    return team.id, [t.id for t in tasks]


async def test_a_member_given_several_tasks_at_once_does_them_one_turn_at_a_time(
    tmp_path: Path,
) -> None:
    """More tasks than the re-wake bound, all assigned before the member is woken: every turn that
    takes one counts as progress, so it is woken again until all are done."""
    store, ctx = InMemoryStore(), RuntimeContext(session_id="s", user_id="alice")
    client = LocalTeamClient(store, ctx)
    titles = [f"task {i}" for i in range(MAX_REWAKES + 2)]
    team_id, ids = await _team(client, titles)
    model = ScriptedModel(one_task_per_turn)
    runtime = member_runtime(store, tmp_path, ctx, team_id, model, poll=0.05)
    try:

        async def all_done() -> bool:
            got = [await client.get_task(team_id, t) for t in ids]
            return all(t.status is TaskStatus.COMPLETED for t in got)

        with anyio.fail_after(60):  # a liveness guard, not a timing threshold
            await eventually(all_done, within=50)
    finally:
        await runtime.aclose()


async def test_a_member_that_never_takes_its_task_is_woken_a_bounded_number_of_times(
    tmp_path: Path,
) -> None:
    """A model that ends every turn without claiming its assigned task: woken once for it and
    :data:`MAX_REWAKES` times more, then the lead is told the task was not taken; further steps
    do not wake the member for it."""
    store, ctx = InMemoryStore(), RuntimeContext(session_id="s", user_id="alice")
    client = LocalTeamClient(store, ctx)
    team_id, [task_id] = await _team(client, ["write the report"])
    model = ScriptedModel(lambda _request: DECLINED)
    runtime = member_runtime(store, tmp_path, ctx, team_id, model, poll=0.05)
    try:

        async def told() -> bool:
            inbox = await client.read_messages(team_id, "lead")
            return any(task_id in m.content and "not woken" in m.content for m in inbox)

        with anyio.fail_after(60):  # a liveness guard, not a timing threshold
            await eventually(told, within=50)
            await members_idle(client, team_id)
            for _ in range(3):  # the supervisor's own steps run too; these make sure some ran
                await runtime.step()
            await members_idle(client, team_id)
            calls = len(model.requests)
            await client.send_message(team_id, "lead", "c", "please take it")  # wakes it once
            await eventually(lambda: _more(model, calls))
            await members_idle(client, team_id)
            for _ in range(3):
                await runtime.step()
            await members_idle(client, team_id)
    finally:
        await runtime.aclose()
    assert calls == 1 + MAX_REWAKES
    assert len(model.requests) == calls + 1
    notes = [m.content for m in await client.read_messages(team_id, "lead")]
    [note] = [n for n in notes if "not woken" in n]  # told once
    assert note.startswith(f"c ended {1 + MAX_REWAKES} turns in a row without taking {task_id}")
    assert (await client.get_task(team_id, task_id)).status is TaskStatus.PENDING


async def _more(model: ScriptedModel, calls: int) -> bool:
    return len(model.requests) > calls
