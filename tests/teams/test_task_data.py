"""Typed task results: a task declares a result schema, ``completeTask`` carries structured data
validated against it (invalid data is refused and nothing is written); old records still load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent, OutputValidationError
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, TeamMemberExtension
from agentscope_teams.teams.results import TaskClaimed
from agentscope_teams.teams.rules.models import Task
from agentscope_teams.tools import output_of

FINDINGS = {
    "type": "object",
    "properties": {
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"line": {"type": "integer"}, "rule": {"type": "string"}},
                "required": ["line", "rule"],
            },
        }
    },
    "required": ["findings"],
}


async def _claimed(client: LocalTeamClient, schema: Any = FINDINGS) -> tuple[str, Task]:
    team = await client.create_team("crew", members=[Member(name="rev")])
    task = await client.assign_task(team.id, "review a.py", result_schema=schema)
    claimed = await client.claim_task(team.id, "rev", task.id)
    assert claimed is not None
    return team.id, claimed


async def test_valid_data_is_stored_and_read_back(client: LocalTeamClient) -> None:
    team_id, task = await _claimed(client)
    data = {"findings": [{"line": 3, "rule": "unused-import"}]}
    done = await client.complete_task(team_id, "rev", task.id, "one finding", data=data)
    assert done.status is TaskStatus.COMPLETED
    again = await client.get_task(team_id, task.id)
    assert again.result_data == data and again.result_schema == FINDINGS
    assert again.result == "one finding"


async def test_empty_lists_and_numbers_survive_every_transition(client: LocalTeamClient) -> None:
    """A native queue rewrites the task record on every transition (Redis: in Lua, whose cjson
    turns ``[]`` into ``{}``): the schema and the data come back exactly as given."""
    schema = {**FINDINGS, "properties": {**FINDINGS["properties"], "tags": {"type": "array"}}}
    schema["required"] = ["findings"]
    schema["examples"] = [{"findings": [], "tags": []}]
    team_id, task = await _claimed(client, schema=schema)
    await client.release_task(team_id, "rev", task.id)
    task = await client.claim_task(team_id, "rev", task.id)
    assert task is not None
    data = {"findings": [], "tags": [], "score": 0.5, "big": 2**53}
    await client.complete_task(team_id, "rev", task.id, "nothing found", data=data)
    again = await client.get_task(team_id, task.id)
    assert again.result_schema == schema and again.result_data == data
    assert json.dumps(again.result_data) == json.dumps(data)


async def test_invalid_or_missing_data_is_refused_and_nothing_is_written(
    client: LocalTeamClient,
) -> None:
    team_id, task = await _claimed(client)
    bad = {"findings": [{"line": "three", "rule": "x"}, {"rule": "y"}]}
    with pytest.raises(OutputValidationError) as caught:
        await client.complete_task(team_id, "rev", task.id, "r", data=bad)
    assert caught.value.problems == [
        "findings.0.line: 'three' is not of type 'integer'",
        "findings.1: 'line' is a required property",
    ]
    with pytest.raises(OutputValidationError, match="declares a result schema"):
        await client.complete_task(team_id, "rev", task.id, "no data")
    after = await client.get_task(team_id, task.id)
    assert after.status is TaskStatus.IN_PROGRESS and after.version == task.version
    assert after.result_data is None


async def test_a_task_without_a_schema_keeps_any_data(client: LocalTeamClient) -> None:
    team_id, task = await _claimed(client, schema=None)
    done = await client.complete_task(team_id, "rev", task.id, "ok", data=[1, "two"])
    assert done.result_data == [1, "two"] and done.result_schema is None


async def test_an_invalid_schema_is_refused_at_creation(client: LocalTeamClient) -> None:
    team = await client.create_team("crew", members=[Member(name="rev")])
    with pytest.raises(ValueError, match=r"result_schema is not a valid JSON schema at type"):
        await client.assign_task(team.id, "t", result_schema={"type": "whatever"})
    assert await client.list_tasks(team.id) == []


def test_a_task_record_from_before_result_schemas_still_loads() -> None:
    old = {
        "schema_version": 1,
        "id": "t-1",
        "seq": 1,
        "title": "old",
        "status": "completed",
        "result": "done",
    }
    task = Task.from_bytes(json.dumps(old).encode(), 4)
    assert task.result_schema is None and task.result_data is None and task.version == 4


# -- the member's tools ------------------------------------------------------------------------


@pytest.fixture
async def memory() -> Any:
    async with store_from_url("memory://") as s:
        yield s


async def test_complete_task_tool_reports_problems_then_accepts_corrected_data(
    tmp_path: Path, memory: BaseStore
) -> None:
    from agentscope_teams.context import RuntimeContext

    client = LocalTeamClient(memory, RuntimeContext(session_id="s", user_id="alice"))
    team = await client.create_team("crew", members=[Member(name="rev")])
    task = await client.assign_task(team.id, "review a.py", result_schema=FINDINGS)
    ext = TeamMemberExtension(client.as_member(team.id, "rev"))
    ext.team = await client.get_team(team.id)
    good = {"findings": [{"line": 3, "rule": "unused-import"}]}
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("claimTask", {"task_id": task.id}),
            ScriptedModel.tool_call(
                "completeTask", {"task_id": task.id, "result": "r", "data": {"findings": [{}]}}
            ),
            ScriptedModel.tool_call(
                "completeTask", {"task_id": task.id, "result": "1 finding", "data": good}
            ),
            "reported",
        ]
    )
    agent = HarnessAgent(
        "rev",
        model,
        workspace=tmp_path / "ws",
        store=memory,
        builtin_tools=False,
        extensions=[ext],
    )
    await agent.call("work", RuntimeContext(session_id="m", user_id="alice"))
    claimed = model.requests[1].messages[-1].tool_results()[0]
    shown = output_of(claimed, TaskClaimed)
    assert shown is not None and shown.task is not None
    assert shown.task.result_schema == FINDINGS
    assert "data matches this JSON schema" in claimed.output
    refused = model.requests[2].messages[-1].tool_results()[0]
    assert refused.is_error
    assert "findings.0: 'line' is a required property" in refused.output
    assert "findings.0: 'rule' is a required property" in refused.output
    accepted = model.requests[3].messages[-1].tool_results()[0]
    assert not accepted.is_error
    final = await client.get_task(team.id, task.id)
    assert final.status is TaskStatus.COMPLETED and final.result_data == good
