"""AgentScope 2.0.11 ``RedisStorage``: get_session + update_session_state of one session.

Run by ``session_roundtrip.py`` under the anchor interpreter::

    bench/.anchor-venv/bin/python bench/anchor_session.py REDIS_URL MESSAGES_JSON

``MESSAGES_JSON`` is a file listing the conversation (the same one the agentscope_teams side stores),
as ``{"role", "name", "blocks": [{"type": "text" | "tool_use" | "tool_result", ...}]}`` objects.
"""

from __future__ import annotations

import functools
import json
import sys
import time
import uuid
from typing import Any
from urllib.parse import urlparse

from agentscope.app.storage import RedisStorage, SessionConfig
from agentscope.message import Msg, TextBlock, ToolCallBlock, ToolResultBlock
from agentscope.state import AgentState
from anchor_worker import serve


def _block(b: dict[str, Any]) -> Any:
    if b["type"] == "text":
        return TextBlock(text=b["text"])
    if b["type"] == "tool_use":
        return ToolCallBlock(
            id=b["id"], name=b["name"], input=json.dumps(b["input"]), state="finished"
        )
    return ToolResultBlock(id=b["tool_use_id"], name=b["name"], output=b["output"], state="success")


def _role(m: dict[str, Any]) -> str:
    # AgentScope keeps tool results in the agent's own (assistant) message.
    return "assistant" if any(b["type"] == "tool_result" for b in m["blocks"]) else m["role"]


def _state(session_id: str, spec: list[dict[str, Any]]) -> AgentState:
    msgs = [
        Msg(name=m["name"], role=_role(m), content=[_block(b) for b in m["blocks"]]) for m in spec
    ]
    return AgentState(session_id=session_id, context=msgs)


def _load_spec(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return list(json.load(fh))


async def setup(spec: list[dict[str, Any]]) -> tuple[dict[str, Any], Any, Any]:
    url = urlparse(sys.argv[1])
    storage = RedisStorage(
        host=url.hostname or "localhost",
        port=url.port or 6379,
        db=int((url.path or "/0").strip("/") or 0),
        password=url.password,
    )
    await storage.__aenter__()
    user, agent, sid = "bench-anchor", "agent", "s-" + uuid.uuid4().hex
    await storage.upsert_session(
        user_id=user,
        agent_id=agent,
        config=SessionConfig(workspace_id="bench"),
        state=_state(sid, spec),
        session_id=sid,
    )
    key = storage.key_config.session.format(user_id=user, session_id=sid)
    size = len((await storage.get_client().get(key)).encode())

    async def run_round(ops: int) -> float:
        t0 = time.perf_counter()
        for _ in range(ops):
            record = await storage.get_session(user, agent, sid)
            await storage.update_session_state(user, agent, sid, record.state)
        return (time.perf_counter() - t0) / ops

    async def cleanup() -> None:
        await storage.delete_session(user, agent, sid)
        await storage.aclose()

    return {"bytes": size}, run_round, cleanup


if __name__ == "__main__":
    serve(functools.partial(setup, _load_spec(sys.argv[2])))
