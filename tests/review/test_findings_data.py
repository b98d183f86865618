"""The review team's findings as data: the schema a member must meet (a readable tool error when it
does not), and a lead that reports the data its members completed with, never their text."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.review import RESULT_SCHEMA, ReviewResult
from agentscope_teams.review.offline_lead import lead_step
from agentscope_teams.review.transcript import Call
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.teams import LocalTeamClient, Member, TaskStatus, TeamMemberExtension
from agentscope_teams.teams.results import (
    MemberSpawned,
    TaskBrief,
    TeamCreated,
    TeamWaited,
)

REVIEW = Path(__file__).resolve().parents[2] / "agentscope_teams" / "review"
CTX = RuntimeContext(session_id="s", user_id="alice")
GOOD = {
    "files": ["app/db.py"],
    "findings": [
        {
            "file": "app/db.py",
            "line": 20,
            "severity": "high",
            "category": "security",
            "rule": "S608",
            "message": "the query is built from the request",
            "advice": "Use query parameters.",
        }
    ],
}


@pytest.fixture
async def memory() -> AsyncIterator[BaseStore]:
    async with store_from_url("memory://") as s:
        yield s


async def test_a_member_completing_with_invalid_findings_gets_a_readable_tool_error(
    tmp_path: Path, memory: BaseStore
) -> None:
    client = LocalTeamClient(memory, CTX)
    team = await client.create_team("code-review", members=[Member(name="security-scanner")])
    task = await client.assign_task(
        team.id, "Security review: app/db.py", "app/db.py", result_schema=RESULT_SCHEMA
    )
    ext = TeamMemberExtension(client.as_member(team.id, "security-scanner"))
    ext.team = await client.get_team(team.id)
    bad: dict[str, Any] = {
        "files": ["app/db.py"],
        "findings": [
            {"file": "app/db.py", "line": 0, "severity": "urgent", "category": "security"},
            {**GOOD["findings"][0], "fix": "extra key"},
        ],
    }
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("claimTask", {"task_id": task.id}),
            ScriptedModel.tool_call(
                "completeTask", {"task_id": task.id, "result": "high app/db.py:20 SQL"}
            ),
            ScriptedModel.tool_call(
                "completeTask", {"task_id": task.id, "result": "two findings", "data": bad}
            ),
            ScriptedModel.tool_call(
                "completeTask", {"task_id": task.id, "result": "one finding", "data": GOOD}
            ),
            "done",
        ]
    )
    agent = HarnessAgent(
        "security-scanner",
        model,
        workspace=tmp_path / "ws",
        store=memory,
        builtin_tools=False,
        extensions=[ext],
    )
    await agent.call("work", RuntimeContext(session_id="m", user_id="alice"))

    claimed = model.requests[1].messages[-1].tool_results()[0]
    assert "data matches this JSON schema" in claimed.output and '"findings"' in claimed.output
    text_only = model.requests[2].messages[-1].tool_results()[0]
    assert text_only.is_error and "declares a result schema" in text_only.output
    refused = model.requests[3].messages[-1].tool_results()[0]
    assert refused.is_error
    for problem in (
        "findings.0.line: 0 is less than the minimum of 1",
        "findings.0.severity: 'urgent' is not one of ['critical', 'high', 'medium', 'low']",
        "findings.0: 'rule' is a required property",
        "findings.0: 'message' is a required property",
        "findings.1: Additional properties are not allowed ('fix' was unexpected)",
    ):
        assert problem in refused.output
    accepted = model.requests[4].messages[-1].tool_results()[0]
    assert not accepted.is_error, accepted.output
    final = await client.get_task(team.id, task.id)
    assert final.status is TaskStatus.COMPLETED and final.result_data == GOOD
    assert ReviewResult.model_validate(final.result_data).findings[0].line == 20


def _lead_calls(tasks: list[TaskBrief]) -> list[Call]:
    """A lead's turn that listed one file, built a team of one and waited for ``tasks``."""

    def done(name: str, args: dict[str, object], result: Any) -> Call:
        data = result.data() if hasattr(result, "data") else None
        return Call(name, args, output=str(result.render()), data=data)

    spawned = MemberSpawned(team_id="t", member="security-scanner", spec="x", runs_in="local")
    return [
        Call("glob_files", {"pattern": "**/*.py"}, output="app/db.py\napp/ok.py"),
        done(
            "createTeam",
            {"name": "code-review"},
            TeamCreated(team_id="t", name="c", lead="lead", specs=[]),
        ),
        done("spawnMember", {"name": "security-scanner", "spec": "security-scanner"}, spawned),
        Call("assignTask", {"title": "x"}, output="Created task t-1."),
        done("waitForTeam", {}, TeamWaited(done=True, seconds=1, tasks=tasks)),
    ]


def _task(result: str, data: Any, task_id: str = "t-1") -> TaskBrief:
    return TaskBrief(
        id=task_id,
        title="Security review: app/db.py",
        status=TaskStatus.COMPLETED,
        owner="security-scanner",
        result=result,
        result_schema=RESULT_SCHEMA,
        result_data=data,
    )


def _report(tasks: list[TaskBrief]) -> str:
    roster = "Specs you may spawn:\n- security-scanner: the security reviewer.\n"
    step = lead_step(roster, "Target: proj", _lead_calls(tasks), model_label="m")
    assert not step.calls
    return step.text


def test_the_lead_reports_the_data_not_the_text_of_a_result() -> None:
    lying_text = "critical app/ok.py:3 eval of the request body [S307; confidence high]"
    report = _report([_task(lying_text, GOOD)])
    assert (
        "- `app/db.py:20` — the query is built from the request (S608, confidence medium) "
        "— fix: Use query parameters. — found by security-scanner"
    ) in report
    assert "app/ok.py:3" not in report and "## Critical" not in report
    assert "No findings in `app/ok.py`." in report

    moved = {**GOOD, "findings": [{**GOOD["findings"][0], "line": 21, "severity": "low"}]}
    changed = _report([_task(lying_text, moved)])
    assert "`app/db.py:21`" in changed and "`app/db.py:20`" not in changed
    assert "| low | 1 |" in changed and "| high | 0 |" in changed


def test_a_task_completed_without_findings_data_is_listed_as_not_reviewed() -> None:
    report = _report([_task("high app/db.py:20 SQL built from input", None)])
    assert "No findings." in report and "app/db.py:20" not in report
    assert "- `t-1` (security-scanner): completed without findings data" in report


def test_the_lead_prompt_quotes_the_findings_schema_and_the_specs_ask_for_data() -> None:
    """A real model copies the schema from its prompt: it must be the one the report reads."""
    prompt = (REVIEW / "lead_prompt.md").read_text()
    quoted = prompt.split("```json", 1)[1].split("```", 1)[0]
    assert json.loads(quoted) == RESULT_SCHEMA
    for spec in (REVIEW / "specs").glob("*.md"):
        text = spec.read_text()
        assert "`data` is your findings" in text and "SEVERITY file:line" not in text, spec
