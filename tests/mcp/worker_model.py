"""The member model of the worker processes in ``test_worker_members`` (loaded with ``--model
python:tests.mcp.worker_model:member_model``): claim a task, call the echo server's MCP tool, and
complete the task with what the tool returned."""

from __future__ import annotations

import re

from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel

from ..teams.scripts import step_results

ECHO_TOOL = "mcp__echo__echo"
CLAIMED = re.compile(r"Claimed task (t-\d+)")


def _claimed(request: ModelRequest) -> str:
    for msg in reversed(request.messages):
        for result in msg.tool_results():
            if result.name == "claimTask" and (found := CLAIMED.search(result.output)):
                return found.group(1)
    raise AssertionError("the member has not claimed a task")


def member_script(request: ModelRequest) -> ModelResponse | str:
    """claimTask -> echo(text=<task id>) -> completeTask(result=<the tool's output>) -> done."""
    results = step_results(request)
    if not results:
        return ScriptedModel.tool_call("claimTask", {})
    last = results[-1]
    if last.name == "claimTask" and CLAIMED.search(last.output):
        return ScriptedModel.tool_call(ECHO_TOOL, {"text": f"from {_claimed(request)}"})
    if last.name == ECHO_TOOL:
        task = {"task_id": _claimed(request), "result": last.output}
        return ScriptedModel.tool_call("completeTask", task)
    return "done"


def member_model() -> ScriptedModel:
    return ScriptedModel(member_script)
