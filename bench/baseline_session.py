"""Session operations of another agentscope-teams tree, for before/after rows in one run.

Run by ``session_roundtrip.py`` and ``session_load.py`` with this project's interpreter and the
other tree (``AGENTSCOPE_TEAMS_BASELINE_PATH``) as ``PYTHONPATH``::

    PYTHONPATH=/path/to/main python bench/baseline_session.py REDIS_URL MODE MESSAGES

``MODE`` is ``roundtrip`` (``get_session`` + ``update_session_state``), ``load`` (``get_session``)
or ``turn`` (load, two messages appended, save; as ``session_load.py``'s turn). The package
``bench`` (fixtures) and ``agentscope_teams`` come from the other tree; the protocol is the anchor
workers' (``anchor_worker.py``).
"""

from __future__ import annotations

import functools
import sys
import time
import uuid
from typing import Any

from anchor_worker import serve

from agentscope_teams.message import AssistantMsg, UserMsg
from agentscope_teams.sessions import RedisStorage
from bench.fixtures import conversation, state_from

USER, AGENT = "bench-baseline", "agent"


async def setup(url: str, mode: str, n: int) -> tuple[dict[str, Any], Any, Any]:
    storage = RedisStorage(url=url)
    await storage.__aenter__()
    sid = "s-" + uuid.uuid4().hex
    await storage.upsert_session(
        user_id=USER, agent_id=AGENT, session_id=sid, state=state_from(conversation(n), sid)
    )

    async def one(i: int) -> None:
        record = await storage.get_session(USER, AGENT, sid)
        assert record is not None
        if mode == "load":
            return
        state = record.state
        if mode == "turn":
            del state.context[n:]
            state.context.append(UserMsg(f"Turn {i}: and the second parser?"))
            state.context.append(
                AssistantMsg("It rejects the same input for the same reason. " * 4)
            )
        await storage.update_session_state(
            user_id=USER, agent_id=AGENT, session_id=sid, state=state
        )

    async def run_round(ops: int) -> float:
        t0 = time.perf_counter()
        for i in range(ops):
            await one(i)
        return (time.perf_counter() - t0) / ops

    async def cleanup() -> None:
        await storage.delete_session(USER, AGENT, sid)
        await storage.aclose()

    return {"mode": mode}, run_round, cleanup


if __name__ == "__main__":
    serve(functools.partial(setup, sys.argv[1], sys.argv[2], int(sys.argv[3])))
