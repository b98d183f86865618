"""Pieces of the structured-output tests that a spawned process imports (top-level only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.events import ConfirmResult, UserConfirmResultEvent
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store import store_from_url
from agentscope_teams.tools import Tool, tool


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str
    line: int
    message: str


class Report(BaseModel):
    model_config = ConfigDict(extra="forbid")
    findings: list[Finding]
    summary: str


class OtherReport(BaseModel):
    verdict: str


@tool(requires_confirmation=True)
async def deploy(target: str) -> str:
    """Deploy to a target (asks the user first).

    Args:
        target: Where to deploy.
    """
    return f"deployed to {target}"


def guarded_tools() -> list[Tool]:
    return [deploy]


def make_agent(store_url: str, workspace: Path, model: ScriptedModel) -> HarnessAgent:
    return HarnessAgent(
        "lead",
        model,
        store=store_from_url(store_url),
        workspace=workspace,
        tools=guarded_tools(),
        builtin_tools=False,
    )


def resume_elsewhere(
    store_url: str, workspace: str, session_id: str, reply_id: str, call_id: str, typed: bool
) -> dict[str, Any]:
    """In a fresh process: confirm the paused call; the model then gives a first answer that
    breaks the stored schema and a second that matches it. Returns what the reply carried."""
    model = ScriptedModel(
        [
            ScriptedModel.final_result({"findings": [{"file": "a.py", "line": "x"}]}),
            ScriptedModel.final_result(
                {"findings": [{"file": "a.py", "line": 3, "message": "bad"}], "summary": "1"}
            ),
        ]
    )

    async def main() -> dict[str, Any]:
        async with make_agent(store_url, Path(workspace), model) as agent:
            event = UserConfirmResultEvent(
                reply_id=reply_id, results=[ConfirmResult(tool_call_id=call_id, confirmed=True)]
            )
            msg = await agent.call(
                event,
                RuntimeContext(session_id=session_id, user_id="alice"),
                output_type=Report if typed else None,
            )
            state = await agent.get_agent_state(
                RuntimeContext(session_id=session_id, user_id="alice")
            )
        feedback = [
            b.output
            for m in model.requests[1].messages
            for b in m.tool_results()
            if b.name == "final_result"
        ]
        return {
            "output_class": type(msg.output).__name__,
            "data": msg.metadata.get("output"),
            "feedback": feedback,
            "tools_offered": [t.name for t in model.requests[0].tools],
            "left_in_state": "structured_output" in state.middle_context,
        }

    return anyio.run(main)
