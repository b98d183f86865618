"""Scripted models for the team runtime tests; also loaded by worker processes through
``agentscope-teams worker --model python:tests.teams.scripts:member_model``."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.teams.delivery import TEAM_MESSAGE

SPECS = {"reviewer": "reviewer", "security": "security-scanner", "perf": "perf-tester"}
TEAMMATE = {"reviewer": "security", "security": "perf", "perf": "reviewer"}
NAME = re.compile(r'You are member "([^"]+)"')
CLAIMED = re.compile(r"Claimed task (t-\d+)")
IDLE_TEXT = "no more work for me"
SUMMARY_REQUEST = "Send me your summary."
SUMMARY = "summary: all my tasks are done"
START = "Form a team and review the project"
ASK = "Ask the team for their summaries"
TASKS = [  # (title, assignee, blocked_by): two per member; t-4 waits for t-2
    ("review app.py", "reviewer", []),
    ("scan app.py", "security", []),
    ("profile app.py", "perf", []),
    ("review the fix of t-2", "reviewer", ["t-2"]),
    ("scan db.py", "security", []),
    ("profile db.py", "perf", []),
]


def call(tool: str, /, **kw: Any) -> ModelResponse:
    return ScriptedModel.tool_call(tool, kw)


def step_results(request: ModelRequest) -> list[ToolResultBlock]:
    """The results this step answers: those of the newest message that is not an injected team
    message (empty when that message is the user's prompt)."""
    for msg in reversed(request.messages):
        if TEAM_MESSAGE not in msg.metadata:
            return msg.tool_results()
    return []


def newest_results(request: ModelRequest) -> list[ToolResultBlock]:
    """The tool results of the newest message holding any (team messages may follow it)."""
    for msg in reversed(request.messages):
        if msg.tool_results():
            return msg.tool_results()
    return []


def member_name(request: ModelRequest) -> str:
    found = NAME.search(request.system_prompt)
    assert found, f"no member preamble in {request.system_prompt!r}"
    return found.group(1)


def member_script(request: ModelRequest) -> ModelResponse | str:
    """Claim, tell a teammate, complete, repeat; end with IDLE_TEXT when nothing is claimable."""
    me = member_name(request)
    results = step_results(request)
    if not results:
        return call("claimTask")
    last = results[-1]
    if last.name == "claimTask" and (found := CLAIMED.search(last.output)):
        task_id = found.group(1)
        return ScriptedModel.tool_calls(
            [
                ("sendMessage", {"to": TEAMMATE[me], "content": f"{me} is working on {task_id}"}),
                ("completeTask", {"task_id": task_id, "result": f"{me} finished {task_id}"}),
            ]
        )
    if last.name == "completeTask":
        return call("claimTask")
    asked = any(SUMMARY_REQUEST in m.get_text_content() for m in request.messages)
    return f"{me}: {SUMMARY if asked else IDLE_TEXT}"


def lead_script(request: ModelRequest) -> ModelResponse | str:
    """START: form the team of three, assign six tasks and wait for them. ASK: ask every member
    for a summary (a broadcast; each member's unreported answer comes back as a message)."""
    prompt = next(m for m in reversed(request.messages) if TEAM_MESSAGE not in m.metadata)
    if prompt.get_text_content() == ASK:
        return call("broadcastMessage", content=SUMMARY_REQUEST)
    if prompt.get_text_content() == START:
        steps: list[tuple[str, dict[str, Any]]] = [
            ("createTeam", {"name": "review", "description": "Review the sample project"}),
            *(("spawnMember", {"name": n, "spec": s}) for n, s in SPECS.items()),
        ]
        for title, assignee, blocked in TASKS:
            task = {"title": title, "assignee": assignee, "blocked_by": blocked}
            steps.append(("assignTask", task))
        return ScriptedModel.tool_calls(steps)
    results = prompt.tool_results()
    if results and results[-1].name == "assignTask":
        return call("waitForTeam", timeout_seconds=90)
    if results and results[-1].name == "waitForTeam":
        return "The tasks are done."
    return "noted"


def member_model() -> ScriptedModel:
    """The member model of worker processes (``MEMBER_DELAY`` seconds per step)."""
    return ScriptedModel(member_script, delay=float(os.environ.get("MEMBER_DELAY", "0")))


def scripted(fn: Callable[[ModelRequest], ModelResponse | str]) -> ScriptedModel:
    return ScriptedModel(fn)
