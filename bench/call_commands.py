"""Redis commands per ``HarnessAgent.call()``, counted (not timed): issue 14's first target.

Every command and script call goes through the client's ``execute_command``; the bench wraps it and
counts what one call sends. Cases: a one-step call on a new session, a one-step call on an existing
session, and a call with one tool step (a checkpoint save, then the final save). The lease is
acquired (1), the session read (1), and every save is fenced by the lease inside the store; the
last save also releases it. Before issue 14 the existing-session case was 5 (lease create, session
read, lease verify read, save, lease delete).
"""

from __future__ import annotations

import tempfile
import uuid
from typing import Any

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.store import RedisStore

from .fixtures import REDIS_URL, BareModel, drop_redis_namespace, noop
from .stats import section, table, verdict

TARGET = 3  # commands per one-step call on an existing session
# Measured with this counter on the code before issue 14 (commit a319aee).
BEFORE = {"new session, one step": 5, "existing session, one step": 5, "one tool step": 7}


def _count(client: Any) -> list[str]:
    sent: list[str] = []
    inner = client.execute_command

    async def execute_command(*args: Any, **kw: Any) -> Any:
        sent.append(str(args[0]))
        return await inner(*args, **kw)

    client.execute_command = execute_command
    return sent


async def _counts(tmp: str, namespace: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    async with RedisStore(REDIS_URL, namespace=namespace) as store:
        sent = _count(store._client)
        for case, iters in (("one step", 0), ("one tool step", 1)):
            agent = HarnessAgent(
                "lead", BareModel(tool_iters=iters), "", store=store, workspace=f"{tmp}/ws",
                builtin_tools=False, tools=[noop],
            )  # fmt: skip
            ctx = RuntimeContext(session_id="s-" + uuid.uuid4().hex, user_id="bench")
            sent.clear()
            await agent.call("hi", ctx)
            if iters:
                out[case] = list(sent)
                continue
            out["new session, one step"] = list(sent)
            sent.clear()
            await agent.call("hi", ctx)
            out["existing session, one step"] = list(sent)
    return out


async def run(fast: bool) -> str:
    namespace = "bench-cmds-" + uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory() as tmp:
        counts = await _counts(tmp, namespace)
    await drop_redis_namespace(namespace)
    rows = [
        [case, str(BEFORE.get(case, "?")), str(len(sent)), " ".join(sent)]
        for case, sent in counts.items()
    ]
    existing = len(counts["existing session, one step"])
    return section(
        "Redis commands per HarnessAgent.call() (counted)",
        "Commands one call sends to Redis (wrapping the client's `execute_command`); before = the "
        "same count on the code before issue 14 (lease verify read and separate lease delete).",
        table(["call", "before", "now", "commands"], rows),
        [
            f"existing session, one step <= {TARGET} commands: {existing} — {verdict(existing <= TARGET)}"
        ],
    )
