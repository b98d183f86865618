"""Subagent delegation, synchronous and in the background, driven by ScriptedModel (no LLM, no key).

    python examples/subagents_demo.py

The lead delegates twice with ``agent_spawn``: once waiting for the answer (``timeout_seconds`` > 0)
and once in the background (``timeout_seconds=0``, which returns a run id at once); it then waits for
the background run with ``agent_wait``. Each subagent works in its own stored session.
"""

from __future__ import annotations

import re
import tempfile
from contextlib import aclosing
from pathlib import Path

import anyio

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model import ModelRequest, ModelResponse, ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.subagents import SubagentSpec

RUN_ID = re.compile(r"\br-[0-9a-f]+\b")


def last_result(request: ModelRequest) -> str:
    """The newest tool result the lead has seen."""
    for msg in reversed(request.messages):
        if msg.tool_results():
            return msg.tool_results()[-1].output
    return ""


def lead_brain(request: ModelRequest) -> ModelResponse | str:
    """The lead's script, decided from the conversation (so it is safe to share and to replay)."""
    steps = sum(1 for m in request.messages if m.role == "assistant")
    if steps == 0:
        return ScriptedModel.tool_call(
            "agent_spawn",
            {"agent": "reviewer", "task": "Review app.py", "timeout_seconds": 10},
            text="Asking the reviewer and waiting for the answer.",
        )
    if steps == 1:
        return ScriptedModel.tool_call(
            "agent_spawn",
            {"agent": "summarizer", "task": "Summarize the changes", "timeout_seconds": 0},
            text="Starting the summarizer in the background.",
        )
    if steps == 2:
        run = RUN_ID.search(last_result(request))
        return ScriptedModel.tool_call(
            "agent_wait", {"run": run.group(0) if run else "?", "timeout_seconds": 10}
        )
    return "Both subagents answered; the review and the summary are above."


async def main() -> None:
    store = InMemoryStore()
    specs = [
        SubagentSpec(name="reviewer", description="Reviews code.", model="reviewer"),
        SubagentSpec(name="summarizer", description="Summarizes changes.", model="summarizer"),
    ]
    children = {
        "reviewer": ScriptedModel(["app.py looks fine; one nit: rename `x` to `count`."]),
        "summarizer": ScriptedModel(["Two files changed: app.py and util.py."], delay=0.2),
    }
    ctx = RuntimeContext(session_id="demo", user_id="alice")
    with tempfile.TemporaryDirectory() as tmp:
        async with HarnessAgent(
            "lead",
            ScriptedModel(lead_brain, name="lead"),
            workspace=Path(tmp),
            store=store,
            specs=specs,
            models=children,
        ) as lead:
            # aclosing: leaving the loop early (an error, a break) stops the reply cleanly
            stream = lead.stream("Review my change and summarize it.", ctx)
            async with aclosing(stream) as events:
                async for event in events:
                    if event.type == "tool_call":
                        print(f"lead calls {event.tool_call.name} {event.tool_call.input}")
                    elif event.type == "tool_result":
                        print(f"  -> {' '.join(event.result.output.split())[:150]}")
                    elif event.type == "reply_end":
                        print(f"lead: {event.msg.get_text_content()}")
            sessions = await lead.sessions.list_sessions("alice", "reviewer")
            print(f"the reviewer kept its own session: {[s.session_id for s in sessions]}")


if __name__ == "__main__":
    anyio.run(main)
