"""A task's ``result_schema`` under attack (issue 22, findings 1 and 2), on both board paths of
every backend: refused at creation with a clear error, checked off the event loop within a time
bound at completion, and a schema stored before the rules fails its task with why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import InvalidSchema, OutputValidationError
from agentscope_teams.schema_guard import SchemaLimits
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, TeamLeadExtension
from agentscope_teams.teams.rules import limits
from agentscope_teams.teams.rules.models import Task

from ..schema_attacks import ALTERNATING, NESTED, recording_server, ticks_during
from .board_paths import both_paths  # noqa: F401 (both paths of every backend)
from .test_tools import SPEC_DIR, call, results


def _string(pattern: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": pattern}},
        "required": ["s"],
    }


async def _claimed(client: LocalTeamClient, schema: Any) -> tuple[str, Task]:
    team = await client.create_team("crew", members=[Member(name="rev")])
    task = await client.assign_task(team.id, "review a.py", result_schema=schema)
    claimed = await client.claim_task(team.id, "rev", task.id)
    assert claimed is not None
    return team.id, claimed


async def test_remote_refs_and_ref_cycles_are_refused_at_creation(client: LocalTeamClient) -> None:
    team = await client.create_team("crew", members=[Member(name="rev")])
    with recording_server() as (base, requested):
        remote = {"type": "object", "properties": {"a": {"$ref": base + "/a.json"}}}
        with pytest.raises(InvalidSchema, match=r"result_schema is not accepted: \$ref 'http"):
            await client.assign_task(team.id, "t", result_schema=remote)
        with pytest.raises(InvalidSchema, match=r"result_schema is not accepted: .*leads back"):
            await client.assign_task(team.id, "t", result_schema={"$ref": "#"})
        assert requested == []
    assert await client.list_tasks(team.id) == []


async def test_a_slow_check_is_a_readable_error_and_the_loop_keeps_running(
    client: LocalTeamClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        limits, "RESULT_SCHEMA_LIMITS", SchemaLimits(max_schema_chars=10_000, check_seconds=0.3)
    )
    team_id, task = await _claimed(client, _string(ALTERNATING))
    outcome, ticks = await ticks_during(
        lambda: client.complete_task(team_id, "rev", task.id, "r", data={"s": "a" * 40 + "!"})
    )
    assert isinstance(outcome, OutputValidationError), outcome
    assert outcome.problems == [
        "(root): not checked: checking the data against the schema took longer than 0.3 s "
        "(a slow pattern or many nested alternatives); send simpler data, or ask for a simpler "
        "schema"
    ]
    assert ticks >= 10, ticks  # a blocked loop gives the ticker no turn
    after = await client.get_task(team_id, task.id)
    assert after.status is TaskStatus.IN_PROGRESS and after.version == task.version
    done = await client.complete_task(team_id, "rev", task.id, "r", data={"s": "aaaa"})
    assert done.status is TaskStatus.COMPLETED and done.result_data == {"s": "aaaa"}


async def test_the_audit_pattern_and_8000_unique_objects_are_answered(
    client: LocalTeamClient,
) -> None:
    team_id, task = await _claimed(client, _string(NESTED))
    with pytest.raises(OutputValidationError, match="does not match"):
        await client.complete_task(team_id, "rev", task.id, "r", data={"s": "a" * 30 + "!"})
    await client.complete_task(team_id, "rev", task.id, "r", data={"s": "a" * 31})
    unique = {"type": "array", "uniqueItems": True}
    team = await client.create_team("crew2", members=[Member(name="rev")])
    t2 = await client.assign_task(team.id, "t", result_schema=unique)
    await client.claim_task(team.id, "rev", t2.id)
    items = [{"": i} for i in range(8000)]  # short keys: within limits.MAX_TEXT as JSON
    with pytest.raises(OutputValidationError, match="item 8000 equals item 7"):
        await client.complete_task(team.id, "rev", t2.id, "r", data=[*items, {"": 7}])
    done = await client.complete_task(team.id, "rev", t2.id, "r", data=items)
    assert done.status is TaskStatus.COMPLETED


def _as_before(value: object) -> dict[str, Any] | None:
    """What ``limits.result_schema`` accepted before the guard: any valid draft 2020-12 schema."""
    if value is None:
        return None
    jsonschema.Draft202012Validator.check_schema(value)
    return dict(value)  # type: ignore[call-overload]


@pytest.mark.parametrize("kind", ["remote-ref", "ref-cycle"])
async def test_a_stored_schema_the_rules_now_refuse_fails_its_task_with_why(
    client: LocalTeamClient, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    with recording_server() as (base, requested):
        schema = {"$ref": base + "/x.json"} if kind == "remote-ref" else {"$ref": "#"}
        with monkeypatch.context() as before:  # stored before the fix
            before.setattr(limits, "result_schema", _as_before)
            team_id, task = await _claimed(client, schema)
        done = await client.complete_task(team_id, "rev", task.id, "the work", data={"a": 1})
        assert requested == []
    assert done.status is TaskStatus.FAILED and done.result_data is None
    assert done.error is not None
    assert done.error.startswith(
        f"task {task.id!r} failed: its result_schema was stored before the current schema rules "
        "and is not accepted: "
    )
    assert done.error.endswith("The result was: the work")
    seen = await client.get_task(team_id, task.id)  # what the lead reads
    assert seen.status is TaskStatus.FAILED and seen.error == done.error
    assert seen.history[-1].action == "failed"


async def test_the_lead_gets_a_tool_error_for_an_unsafe_schema(
    tmp_path: Path, store: BaseStore, alice: RuntimeContext
) -> None:
    from agentscope_teams.model.scripted import ScriptedModel

    script = [
        call("createTeam", name="crew"),
        call("assignTask", title="t", result_schema={"$ref": "#"}),
        call("assignTask", title="t", result_schema={"$ref": "file:///dev/zero"}),
        "done",
    ]
    model = ScriptedModel(script)
    ext = TeamLeadExtension(SPEC_DIR)
    lead = HarnessAgent("lead", model, workspace=tmp_path / "ws", store=store, extensions=[ext])
    try:
        await lead.call("go", alice)
    finally:
        await ext.aclose()
    errors = [r.output for r in results(model) if r.is_error]
    assert len(errors) == 2, errors
    assert "leads back to (top level)" in errors[0]
    assert "$ref 'file:///dev/zero' at $ref is not local" in errors[1]
