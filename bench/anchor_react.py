"""AgentScope 2.0.11 ``Agent``: one reply of N tool iterations with a scripted model and a no-op tool.

Run by ``react_overhead.py`` under the anchor interpreter::

    bench/.anchor-venv/bin/python bench/anchor_react.py TOOL_ITERS

The model is the equivalent of the agentscope_teams side's: it answers from a counter (a no-op tool
call ``TOOL_ITERS`` times, then a text), without formatting or recording anything. The tool is allowed
outright, so no permission prompt interrupts the loop. A round answers seconds per reply, timing only
``agent.reply`` (a fresh Agent and state per reply, built outside the timed part).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from agentscope.agent import Agent, ReActConfig
from agentscope.credential import CredentialBase
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import TextBlock, ToolCallBlock, UserMsg
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit
from anchor_worker import serve
from pydantic import BaseModel


class _NoCredential(CredentialBase):
    """The scripted model talks to nothing."""


class ScriptedAnchorModel(ChatModelBase):
    """Answers ``tool_iters`` no-op tool calls, then "done"; stateless apart from the counter."""

    class Parameters(BaseModel):
        """No parameters."""

    def __init__(self, tool_iters: int) -> None:
        super().__init__(
            credential=_NoCredential(),
            model="scripted",
            parameters=ScriptedAnchorModel.Parameters(),
            stream=False,
        )
        self.formatter = OpenAIChatFormatter()  # the agent asks it which media types pass
        self.tool_iters = tool_iters
        self.calls = 0

    async def _call_api(self, model_name: str, messages: Any, **kwargs: Any) -> ChatResponse:
        self.calls += 1
        if self.calls <= self.tool_iters:
            call = ToolCallBlock(id=f"call_{self.calls}", name="noop", input="{}")
            return ChatResponse(content=[call], is_last=True)
        self.calls = 0
        return ChatResponse(content=[TextBlock(text="done")], is_last=True)


async def noop() -> str:
    """Do nothing."""
    return "ok"


async def setup() -> tuple[dict[str, Any], Any, Any]:
    tool_iters = int(sys.argv[1])
    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="bench")
    toolkit = Toolkit(tools=[FunctionTool(noop, permission=allow)])
    model = ScriptedAnchorModel(tool_iters)

    def agent() -> Agent:
        return Agent(
            name="bench",
            system_prompt="You are a benchmark.",
            model=model,
            toolkit=toolkit,
            react_config=ReActConfig(max_iters=tool_iters + 5),
        )

    probe = agent()
    final = await probe.reply(UserMsg(name="user", content="go"))
    calls = sum(1 for m in probe.state.context for b in m.content if b.type == "tool_result")
    if calls != tool_iters or final.get_text_content() != "done":
        raise RuntimeError(f"expected {tool_iters} tool results and 'done', got {calls}")

    async def run_round(ops: int) -> float:
        total = 0.0
        for _ in range(ops):
            a = agent()
            msg = UserMsg(name="user", content="go")
            t0 = time.perf_counter()
            await a.reply(msg)
            total += time.perf_counter() - t0
        return total / ops

    return {"tool_results": calls}, run_round, None


if __name__ == "__main__":
    serve(setup)
