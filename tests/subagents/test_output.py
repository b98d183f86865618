"""Subagent specs with a structured output: ``output:`` in the frontmatter (a JSON schema) or
``SubagentSpec(output_type=...)``; agent_spawn (sync and background) and agent_wait return the
validated data to the parent."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from agentscope_teams import HarnessAgent, SpecError, StoreError, SubagentSpec
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.subagents import RunStatus, load_specs
from agentscope_teams.subagents.results import RunCompleted
from agentscope_teams.tools import output_of

from .helpers import (
    ALICE,
    call,
    last_output,
    make_parent,
    run_id_in,
    runs,
    settled,
    spawn,
    tool_results,
)

VERDICT_SPEC = """---
description: Judges a change. Use for a verdict.
model: judge
output:
  type: object
  properties:
    verdict: {enum: [approve, reject]}
    reasons: {type: array, items: {type: string}}
  required: [verdict, reasons]
  additionalProperties: false
---
You judge changes.
"""


class Verdict(BaseModel):
    verdict: str
    score: int


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


def write_spec(tmp_path: Path, text: str, name: str = "judge.md") -> Path:
    specs = tmp_path / "specs"
    specs.mkdir(exist_ok=True)
    (specs / name).write_text(text)
    return specs


async def test_spec_file_output_end_to_end_sync_spawn(tmp_path: Path, store: InMemoryStore) -> None:
    specs = write_spec(tmp_path, VERDICT_SPEC)
    child = ScriptedModel(
        [
            ScriptedModel.final_result({"verdict": "maybe", "reasons": []}),
            ScriptedModel.final_result({"verdict": "approve", "reasons": ["tests pass"]}),
        ],
        name="judge",
    )
    lead_model = ScriptedModel([spawn("judge", "judge PR 7"), "approved"], name="lead")
    lead = HarnessAgent(
        "lead",
        lead_model,
        workspace=tmp_path / "ws",
        store=store,
        specs=specs,
        models={"judge": child},
    )
    assert (await lead.call("judge it", ALICE)).get_text_content() == "approved"
    [block] = tool_results(lead_model.requests[1])
    done = output_of(block, RunCompleted)
    assert done is not None
    assert done.output == {"verdict": "approve", "reasons": ["tests pass"]}
    assert '"verdict": "approve"' in block.output  # the parent model reads the JSON too
    # the child was told what was wrong with its first answer, with the field path
    [feedback] = tool_results(child.requests[1])
    assert "verdict: 'maybe' is not one of ['approve', 'reject']" in feedback.output
    [rec] = await runs(store)
    assert rec.status is RunStatus.COMPLETED and rec.output == done.output


async def test_output_type_in_code_background_spawn_and_agent_wait(
    tmp_path: Path, store: InMemoryStore
) -> None:
    child = ScriptedModel([ScriptedModel.final_result({"verdict": "ok", "score": 9})], delay=0.1)
    spec = SubagentSpec(name="rate", description="rates", model="rate", output_type=Verdict)
    lead_model = ScriptedModel([spawn("rate", "rate it", timeout_seconds=0), "started"])
    lead = make_parent(tmp_path, store, lead_model, {"rate": child}, specs=[spec])
    await lead.call("go", ALICE)
    run = run_id_in(last_output(lead_model.requests[1]))
    await settled(store)
    waiter = ScriptedModel([call("agent_wait", run=run, timeout_seconds=5), "got it"])
    lead2 = make_parent(tmp_path, store, waiter, {"rate": child}, specs=[spec])
    await lead2.call("wait for it", ALICE)
    [block] = [b for b in tool_results(waiter.requests[1]) if b.name == "agent_wait"]
    done = output_of(block, RunCompleted)
    assert done is not None and done.output == {"verdict": "ok", "score": 9}


async def test_a_child_that_never_gives_valid_output_fails_the_run_as_a_tool_error(
    tmp_path: Path, store: InMemoryStore
) -> None:
    bad = ScriptedModel.final_result({"verdict": "ok", "score": "high"})
    child = ScriptedModel([bad, bad, bad])
    spec = SubagentSpec(name="rate", description="rates", model="rate", output_type=Verdict)
    lead_model = ScriptedModel([spawn("rate", "rate it"), "noted"])
    lead = make_parent(tmp_path, store, lead_model, {"rate": child}, specs=[spec])
    await lead.call("go", ALICE)
    [block] = tool_results(lead_model.requests[1])
    assert block.is_error
    assert "OutputRetriesExceededError" in block.output and "score" in block.output
    [rec] = await runs(store)
    assert rec.status is RunStatus.FAILED and rec.output is None


def test_a_bad_output_schema_names_the_file_and_field(tmp_path: Path) -> None:
    text = VERDICT_SPEC.replace("{type: array,", "{type: list,")
    specs = write_spec(tmp_path, text)
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    message = str(caught.value)
    assert "judge.md:8" in message  # the line of the bad key inside the schema
    assert "output is not a valid JSON schema at properties.reasons.type" in message


def test_output_as_json_text_and_code_specs(tmp_path: Path) -> None:
    text = '---\ndescription: d\noutput: \'{"type": "object", "properties": {"a": {"type": "integer"}}}\'\n---\nx\n'
    specs = write_spec(tmp_path, text, "t.md")
    loaded = load_specs(specs).specs["t"]
    assert loaded.output == {"type": "object", "properties": {"a": {"type": "integer"}}}
    with pytest.raises(ValueError, match="not both"):
        SubagentSpec(name="x", description="d", output={"type": "object"}, output_type=Verdict)
    with pytest.raises(ValueError, match="output must be a JSON schema"):
        SubagentSpec(name="x", description="d", output=5)


async def test_a_child_failing_on_the_store_tells_the_parent_no_connection_details(
    tmp_path: Path, store: InMemoryStore
) -> None:
    failure = StoreError(
        "get failed on postgresql+asyncpg://app@db.internal:5432/prod: boom",
        public="get failed in the PostgreSQL store (SQLSTATE 58000); the server's log has it",
    )
    child = ScriptedModel([failure])
    spec = SubagentSpec(name="rate", description="rates", model="rate")
    lead_model = ScriptedModel([spawn("rate", "rate it"), "noted"])
    lead = make_parent(tmp_path, store, lead_model, {"rate": child}, specs=[spec])
    await lead.call("go", ALICE)
    [rec] = await runs(store)
    [block] = tool_results(lead_model.requests[1])
    assert rec.status is RunStatus.FAILED and rec.error is not None
    for shown in (rec.error, block.output):
        assert "SQLSTATE 58000" in shown and "db.internal" not in shown and "app@" not in shown
