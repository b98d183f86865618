"""A model that records every request's system prompt (``--model
python:tests.cli.recording_model:model``): one JSON line per request, appended to the file named by
``RECORDED_REQUESTS``. The lead (whose system prompt holds ``run``'s lead prompt) spawns the
``helper`` subagent once, then answers; any other agent answers at once."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agentscope_teams.cli.run_cmd import LEAD_PROMPT
from agentscope_teams.model import ModelRequest, ModelResponse, ScriptedModel

LOG_ENV = "RECORDED_REQUESTS"


def _answer(request: ModelRequest) -> ModelResponse:
    lead = LEAD_PROMPT in request.system_prompt
    with Path(os.environ[LOG_ENV]).open("a", encoding="utf-8") as log:
        log.write(json.dumps({"lead": lead, "system": request.system_prompt}) + "\n")
    if not lead:
        return ScriptedModel.text("helper: done")
    if any(m.tool_results() for m in request.messages):
        return ScriptedModel.text("lead: done")
    return ScriptedModel.tool_call("agent_spawn", {"agent": "helper", "task": "check the rules"})


def model() -> ScriptedModel:
    return ScriptedModel(_answer)


def recorded(log: Path) -> list[dict[str, object]]:
    """The recorded requests, in order."""
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
