"""What the sections share: service URLs, the 50-message conversation, a no-op tool, a bare model."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import anyio

from agentscope_teams.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock, new_id
from agentscope_teams.model.base import ModelRequest, ModelResponse, StreamItem
from agentscope_teams.state import AgentState
from agentscope_teams.tools import tool

REDIS_URL = os.environ.get("AGENTSCOPE_TEAMS_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES_URL = os.environ.get(
    "AGENTSCOPE_TEAMS_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
MYSQL_URL = os.environ.get("AGENTSCOPE_TEAMS_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")


async def drop_redis_namespace(namespace: str) -> None:
    """Delete every Redis key of a ``RedisStore`` namespace a section created."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        keys = [k async for k in client.scan_iter(match=f"{namespace}:*", count=1000)]
        for i in range(0, len(keys), 500):
            await client.delete(*keys[i : i + 500])
    finally:
        await client.aclose()


def conversation(messages: int = 50) -> list[dict[str, Any]]:
    """A coding-session transcript (~700 bytes a message), as plain data both frameworks can load.

    Cycles through: user question, assistant text + tool call, tool result, assistant answer.
    """
    out: list[dict[str, Any]] = []
    for i in range(messages):
        kind = i % 4
        if kind == 0:
            text = f"Question {i}: why does the parser reject this input? " * 10
            out.append({"role": "user", "name": "user", "blocks": [_text(text)]})
        elif kind == 1:
            call: dict[str, Any] = {"type": "tool_use", "id": f"call_{i}", "name": "read_file"}
            call["input"] = {"path": f"src/module_{i}.py", "offset": 0, "limit": 200}
            blocks = [_text("Let me read the module that defines the grammar first. " * 4), call]
            out.append({"role": "assistant", "name": "agent", "blocks": blocks})
        elif kind == 2:
            output = "def parse(text: str) -> Node:\n    return Grammar().parse(text)\n" * 10
            result = {"type": "tool_result", "tool_use_id": f"call_{i - 1}", "name": "read_file"}
            result["output"] = output
            out.append({"role": "user", "name": "user", "blocks": [result]})
        else:
            text = "The grammar has no rule for trailing commas; adding one fixes it. " * 8
            out.append({"role": "assistant", "name": "agent", "blocks": [_text(text)]})
    return out


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def state_from(spec: list[dict[str, Any]], session_id: str) -> AgentState:
    """The conversation as an agentscope_teams ``AgentState``."""
    msgs = []
    for m in spec:
        blocks: list[Any] = []
        for b in m["blocks"]:
            if b["type"] == "text":
                blocks.append(TextBlock(text=b["text"]))
            elif b["type"] == "tool_use":
                blocks.append(ToolUseBlock(id=b["id"], name=b["name"], input=b["input"]))
            else:
                blocks.append(
                    ToolResultBlock(
                        tool_use_id=b["tool_use_id"], name=b["name"], output=b["output"]
                    )
                )
        msgs.append(Msg(role=m["role"], name=m["name"], content=blocks))
    return AgentState(session_id=session_id, context=msgs)


@tool
async def noop() -> str:
    """Do nothing and say so."""
    return "ok"


class BareModel:
    """A scripted :class:`ChatModel` that costs next to nothing: ``tool_iters`` no-op tool calls, then
    "done", optionally awaiting ``delay`` seconds per step.

    Unlike ``ScriptedModel`` it records no requests (``ScriptedModel`` snapshots each one, which is
    the test double's cost, not the loop's); it is the same model as the AgentScope anchor's.
    Sessions are told apart by the request alone (tool results since the last user text), so one
    instance serves concurrent sessions.
    """

    model_name = "bare"

    def __init__(self, tool_iters: int = 1, *, delay: float = 0.0) -> None:
        self.tool_iters = tool_iters
        self.delay = delay

    async def generate(self, request: ModelRequest) -> ModelResponse:
        if self.delay:
            await anyio.sleep(self.delay)
        if request.metadata.get("purpose") == "compression":
            return ModelResponse(content=[TextBlock(text=_summary(request))])
        if _tool_results_since_user(request.messages) < self.tool_iters and request.tools:
            call = ToolUseBlock(id=new_id("call_"), name="noop")
            return ModelResponse(content=[call], stop_reason="tool_use")
        return ModelResponse(content=[TextBlock(text="done")])

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        yield await self.generate(request)


def _tool_results_since_user(messages: list[Msg]) -> int:
    n = 0
    for m in reversed(messages):
        results = m.tool_results()
        if m.role == "user" and not results:
            return n
        n += len(results)
    return n


def _summary(request: ModelRequest) -> str:
    """A summary as long as the transcript it replaces (the config's cap must bound it)."""
    return "Summary: " + request.messages[-1].get_text_content()
