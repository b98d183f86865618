"""A TaskCreated hook that exits 2 (or answers ``decision: "block"``) refuses the task, as in
Claude Code: the task never reaches the board (no record, no queue entry, nothing to claim or to
block on), the lead's ``assignTask`` call is a tool error carrying the hook's stderr, and a caller
in code gets :class:`~agentscope_teams.errors.TaskBlockedError`. Run through the lead's tool call
with a real hook script, on the in-memory store and on Redis (both board paths)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import TaskBlockedError, UnknownTaskError
from agentscope_teams.hooks import Hooks, parse_hooks
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.server.errors import error_body, error_from_response, status_for
from agentscope_teams.store import BaseStore, InMemoryStore, store_from_url
from agentscope_teams.teams import LocalTeamClient
from agentscope_teams.teams.queues.base import NATIVE_ENV
from agentscope_teams.teams.rules.models import Member, TaskStatus

from ..backends import REDIS_URL, unique_namespace
from ..conftest import require_service
from ..teams.test_tools import SPEC_DIR, call, results
from .helpers import read_lines, script

REFUSAL = "every task needs an acceptance criterion: add 'done when ...' to its description"


def gate(tmp_path: Path) -> str:
    """A TaskCreated hook script: logs each event, refuses a task whose description lacks
    'done when' with exit 2 and the reason on stderr."""
    log = tmp_path / "created.jsonl"
    body = (
        f'payload=$(cat)\necho "$payload" >> {log}\n'
        f"case \"$payload\" in *'done when'*) exit 0;; esac\n"
        f'echo "{REFUSAL}" >&2\nexit 2\n'
    )
    return script(tmp_path, "gate.sh", body)


def config(command: str) -> dict[str, Any]:
    return {"TaskCreated": [{"hooks": [{"type": "command", "command": command}]}]}


@pytest.fixture(params=["memory", "redis-generic", "redis-native"])
async def store(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[BaseStore]:
    if request.param == "memory":
        yield InMemoryStore()
        return
    require_service("redis")
    monkeypatch.setenv(NATIVE_ENV, "1" if request.param == "redis-native" else "0")
    async with store_from_url(REDIS_URL) as s:
        yield s


async def test_the_leads_refused_task_is_a_tool_error_and_never_on_the_board(
    tmp_path: Path, store: BaseStore
) -> None:
    ctx = RuntimeContext(session_id="lead-s", user_id="alice", org_id=unique_namespace())
    model = ScriptedModel(
        [
            call("createTeam", name="crew"),
            call("assignTask", title="refactor", description="make it nicer"),
            call("assignTask", title="docs", description="the hooks page; done when it builds"),
            "done",
        ]
    )
    lead = HarnessAgent(
        "lead", model, workspace=tmp_path / "ws", store=store, specs=SPEC_DIR,
        hooks=config(gate(tmp_path)),  # the operator's hooks: the lead's team client fires them
    )  # fmt: skip
    async with lead:
        await lead.call("go", ctx)

    refused, created = results(model)[1:3]
    assert refused.is_error and REFUSAL in refused.output
    assert "refactor" in refused.output and "was not created" in refused.output
    assert not created.is_error
    seen = read_lines(tmp_path / "created.jsonl")
    assert [e["task_subject"] for e in seen] == ["refactor", "docs"]
    lost_id = seen[0]["task_id"]  # the hook saw the id the task would have had

    client = LocalTeamClient(store, ctx)  # another view of the board, with no hooks
    team = (await client.list_teams())[0]
    tasks = await client.list_tasks(team.id)
    assert [t.title for t in tasks] == ["docs"]
    assert lost_id not in {t.id for t in tasks}
    with pytest.raises(UnknownTaskError):
        await client.get_task(team.id, lost_id)
    with pytest.raises(UnknownTaskError):  # nothing can wait on it
        await client.assign_task(team.id, "after", blocked_by=[lost_id])
    await client.spawn_member(team.id, "ann", "reviewer")
    first = await client.claim_task(team.id, "ann")
    assert first is not None and first.title == "docs"
    await client.complete_task(team.id, "ann", first.id, "written")
    assert await client.claim_task(team.id, "ann") is None  # not in the queue either
    await client.delete_team(team.id)


async def test_decision_block_refuses_too_and_code_gets_task_blocked_error(
    tmp_path: Path,
) -> None:
    answer = {"decision": "block", "reason": "no tasks on Fridays"}
    hook = script(tmp_path, "block.sh", f"cat > /dev/null; echo '{json.dumps(answer)}'")
    hooks = Hooks(parse_hooks(config(hook)), project_dir=tmp_path)
    client = LocalTeamClient(
        InMemoryStore(), RuntimeContext(session_id="s", user_id="u"), hooks=hooks
    )
    team = await client.create_team("t", members=[Member(name="ann")])
    with pytest.raises(TaskBlockedError) as caught:
        await client.assign_task(team.id, "ship", assignee="ann")
    exc = caught.value
    assert exc.title == "ship" and exc.reason == "no tasks on Fridays"
    assert exc.hooks == [f"TaskCreated {hook}"]
    assert await client.list_tasks(team.id) == []
    ann = (await client.get_team(team.id)).member("ann")
    assert ann is not None and ann.stop is None  # a block alone stops nobody

    # over HTTP: a 409 carrying the same fields, read back into the same class
    assert status_for(exc) == 409
    back = error_from_response(409, error_body(exc), "assign task")
    assert isinstance(back, TaskBlockedError) and back.reason == exc.reason


async def test_a_task_the_hook_lets_through_is_created_once_with_its_hook_fired_once(
    tmp_path: Path,
) -> None:
    hooks = Hooks(parse_hooks(config(gate(tmp_path))), project_dir=tmp_path)
    client = LocalTeamClient(
        InMemoryStore(), RuntimeContext(session_id="s", user_id="u"), hooks=hooks
    )
    team = await client.create_team("t", members=[Member(name="ann")])
    task = await client.assign_task(team.id, "ship", "done when shipped", assignee="ann")
    assert (await client.get_task(team.id, task.id)).status is TaskStatus.PENDING
    seen = read_lines(tmp_path / "created.jsonl")
    assert [(e["task_id"], e["teammate_name"]) for e in seen] == [(task.id, "ann")]


async def test_a_refused_task_still_gets_its_task_completed_as_cancelled(tmp_path: Path) -> None:
    # every TaskCreated has its TaskCompleted: a hook that tracks open tasks elsewhere (a ticket
    # it opened on TaskCreated) closes the refused one too
    ended = tmp_path / "ended.jsonl"
    logger = script(tmp_path, "ended.sh", f'payload=$(cat)\necho "$payload" >> {ended}\n')
    data = {**config(gate(tmp_path)), "TaskCompleted": [{"hooks": [{"command": logger}]}]}
    hooks = Hooks(parse_hooks(data), project_dir=tmp_path)
    client = LocalTeamClient(
        InMemoryStore(), RuntimeContext(session_id="s", user_id="u"), hooks=hooks
    )
    team = await client.create_team("t", members=[Member(name="ann")])
    with pytest.raises(TaskBlockedError):
        await client.assign_task(team.id, "refactor", "make it nicer", assignee="ann")
    created = read_lines(tmp_path / "created.jsonl")
    done = read_lines(ended)
    assert [(e["task_id"], e["status"], e["teammate_name"]) for e in done] == [
        (created[0]["task_id"], "cancelled", "ann")
    ]
    ann = (await client.get_team(team.id)).member("ann")
    assert ann is not None and ann.stop is None
