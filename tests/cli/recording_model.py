"""A model that records every request's system prompt (``--model
python:tests.cli.recording_model:model``): one JSON line per request (``who``: lead, member or
subagent), appended to the file named by ``RECORDED_REQUESTS``. The lead spawns the ``helper``
subagent, then forms a team with one ``helper`` member that does one task, then answers."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from agentscope_teams.cli.run_cmd import LEAD_PROMPT
from agentscope_teams.model import ModelRequest, ModelResponse, ScriptedModel

LOG_ENV = "RECORDED_REQUESTS"
MEMBER = re.compile(r'You are member "([^"]+)"')
CLAIMED = re.compile(r"Claimed task (t-\d+)")
LEAD_STEPS: dict[str | None, list[tuple[str, dict[str, Any]]]] = {
    None: [("agent_spawn", {"agent": "helper", "task": "check the rules"})],
    "agent_spawn": [("createTeam", {"name": "crew", "description": "check"})],
    "createTeam": [
        ("spawnMember", {"name": "m-1", "spec": "helper"}),
        ("assignTask", {"title": "check again", "assignee": "m-1"}),
    ],
    "assignTask": [("waitForTeam", {"timeout_seconds": 60})],
}


def _last_tool(request: ModelRequest) -> tuple[str | None, str]:
    """The name and output of the newest tool result (team messages may follow it)."""
    for msg in reversed(request.messages):
        if results := msg.tool_results():
            return results[-1].name, str(results[-1].output)
    return None, ""


def _answer(request: ModelRequest) -> ModelResponse:
    system = request.system_prompt
    who = "lead" if LEAD_PROMPT in system else "member" if MEMBER.search(system) else "subagent"
    with Path(os.environ[LOG_ENV]).open("a", encoding="utf-8") as log:
        log.write(json.dumps({"who": who, "system": system}) + "\n")
    last, output = _last_tool(request)
    if who == "lead":
        steps = LEAD_STEPS.get(last)
        return ScriptedModel.tool_calls(steps) if steps else ScriptedModel.text("lead: done")
    if who == "member":
        if last is None:
            return ScriptedModel.tool_call("claimTask", {})
        if last == "claimTask" and (found := CLAIMED.search(output)):
            done = {"task_id": found.group(1), "result": "checked"}
            return ScriptedModel.tool_call("completeTask", done)
        return ScriptedModel.text("member: done")
    return ScriptedModel.text("helper: done")


def model() -> ScriptedModel:
    return ScriptedModel(_answer)


def recorded(log: Path, who: str) -> list[str]:
    """The system prompts of ``who``'s recorded requests, in order."""
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [str(r["system"]) for r in lines if r["who"] == who]
