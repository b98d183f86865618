"""TaskCreated / TaskCompleted on a team board: one pair per task, whatever its end; a
TaskCompleted hook that exits 2 keeps the task open with its feedback (a quality gate)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import TeamError
from agentscope_teams.hooks import Hooks, parse_hooks
from agentscope_teams.store import InMemoryStore
from agentscope_teams.teams.client import LocalTeamClient
from agentscope_teams.teams.rules.models import Member, TaskStatus

from .helpers import read_lines, script

CTX = RuntimeContext(session_id="s1", user_id="alice")


def logging_hooks(tmp_path: Path, gate: str = "") -> Hooks:
    log = tmp_path / "tasks.jsonl"
    logger = script(tmp_path, "log.sh", f"cat >> {log}; echo >> {log}\n")
    entry = [{"hooks": [{"type": "command", "command": logger}]}]
    config: dict = {"TaskCreated": entry, "TaskCompleted": list(entry)}
    if gate:
        config["TaskCompleted"].append({"hooks": [{"type": "command", "command": gate}]})
    return Hooks(parse_hooks(config), project_dir=tmp_path)


async def test_every_task_gets_one_created_and_one_completed_with_its_status(
    tmp_path: Path,
) -> None:
    client = LocalTeamClient(InMemoryStore(), CTX, hooks=logging_hooks(tmp_path))
    team = await client.create_team("t", members=[Member(name="ann"), Member(name="bob")])
    done = await client.assign_task(team.id, "write docs", "the hooks page", assignee="ann")
    broken = await client.assign_task(team.id, "fix build", assignee="bob")
    dropped = await client.assign_task(team.id, "old idea")
    await client.claim_task(team.id, "ann", done.id)
    await client.complete_task(team.id, "ann", done.id, "written")
    await client.claim_task(team.id, "bob", broken.id)
    await client.fail_task(team.id, "bob", broken.id, "compiler crashed")
    await client.cancel_task(team.id, dropped.id, reason="not needed")

    seen = read_lines(tmp_path / "tasks.jsonl")
    counts = Counter((e["task_id"], e["hook_event_name"]) for e in seen)
    for task in (done, broken, dropped):
        assert counts[(task.id, "TaskCreated")] == 1
        assert counts[(task.id, "TaskCompleted")] == 1
    ends = {e["task_id"]: e["status"] for e in seen if e["hook_event_name"] == "TaskCompleted"}
    assert ends == {done.id: "completed", broken.id: "failed", dropped.id: "cancelled"}
    created = next(e for e in seen if e["task_id"] == done.id)
    assert created["task_subject"] == "write docs" and created["teammate_name"] == "ann"
    assert created["team_name"] == team.id and created["session_id"] == "s1"


async def test_task_completed_exit_2_keeps_the_task_open_with_the_feedback(
    tmp_path: Path,
) -> None:
    ready = tmp_path / "tests-pass"
    gate = script(
        tmp_path,
        "gate.sh",
        f'[ -e {ready} ] || {{ echo "tests are failing: fix them first" >&2; exit 2; }}\n',
    )
    client = LocalTeamClient(InMemoryStore(), CTX, hooks=logging_hooks(tmp_path, gate))
    team = await client.create_team("t", members=[Member(name="ann")])
    task = await client.assign_task(team.id, "ship", assignee="ann")
    await client.claim_task(team.id, "ann", task.id)
    with pytest.raises(TeamError, match="tests are failing: fix them first"):
        await client.complete_task(team.id, "ann", task.id, "shipped")
    assert (await client.get_task(team.id, task.id)).status is TaskStatus.IN_PROGRESS

    ready.touch()  # the control: once the gate passes, the completion goes through
    finished = await client.complete_task(team.id, "ann", task.id, "shipped")
    assert finished.status is TaskStatus.COMPLETED


async def test_a_completion_the_board_refuses_for_its_owner_fires_no_task_completed(
    tmp_path: Path,
) -> None:
    """The TaskCompleted gate runs for a completion the board would take: a member completing a
    task it does not hold (another's, or one not claimed) gets the board's error, and no hook
    hears of a completion that did not happen (nor runs its checks for it)."""
    client = LocalTeamClient(InMemoryStore(), CTX, hooks=logging_hooks(tmp_path))
    team = await client.create_team("t", members=[Member(name="ann"), Member(name="bob")])
    task = await client.assign_task(team.id, "ship")
    with pytest.raises(TeamError, match="pending"):
        await client.complete_task(team.id, "ann", task.id, "shipped")
    await client.claim_task(team.id, "ann", task.id)
    with pytest.raises(TeamError, match="owned by 'ann'"):
        await client.complete_task(team.id, "bob", task.id, "mine now")
    await client.complete_task(team.id, "ann", task.id, "shipped")

    ends = [
        e for e in read_lines(tmp_path / "tasks.jsonl") if e["hook_event_name"] != "TaskCreated"
    ]
    assert [(e["teammate_name"], e["status"]) for e in ends] == [("ann", "completed")]
