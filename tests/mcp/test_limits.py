"""``max_live`` holds under concurrency, and secrets stay out of what a failing server says."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import anyio
import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.store import InMemoryStore

from .helpers import ECHO, results_seen

TOKEN = "tok-0123456789abcdef"


def echo_once(request: ModelRequest) -> ModelResponse | str:
    last = request.messages[-1]
    if not isinstance(last.content, str) and any(
        isinstance(b, ToolResultBlock) for b in last.content
    ):
        return "done"
    return ScriptedModel.tool_call("mcp__echo__echo", {"text": "hi"})


async def test_eight_users_at_once_never_run_more_than_max_live_servers(tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    echo = {**ECHO, "env": {"ECHO_LIVE_DIR": str(live)}}  # each records how many others run
    model = ScriptedModel(echo_once)
    lead = HarnessAgent(
        "lead",
        model,
        store=InMemoryStore(),
        mcp_servers={"echo": echo},
        mcp_options={"max_live": 2},
    )
    replies: list[str] = []

    async def user(n: int) -> None:
        reply = await lead.call("echo", RuntimeContext(session_id=f"s{n}", user_id=f"u{n}"))
        replies.append(reply.get_text_content())

    try:
        async with anyio.create_task_group() as tg:
            for n in range(8):
                tg.start_soon(user, n)
    finally:
        await lead.aclose()
    observed = [int(line) for line in (live / "observed").read_text().split()]
    assert replies == ["done"] * 8
    results = [b for r in model.requests for m in r.messages if not isinstance(m.content, str)
               for b in m.content if isinstance(b, ToolResultBlock)]  # fmt: skip
    assert results and not any(r.is_error for r in results)
    assert len(observed) >= 8  # every user's own server started
    assert max(observed) <= 1  # a server starting never saw two others running
    assert lead.mcp.pool.peak == 2


async def test_a_server_that_fails_to_start_is_explained_without_its_token(
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = "import sys; print('bad login for', sys.argv[1], file=sys.stderr); sys.exit(2)"
    server = {"command": sys.executable, "args": ["-c", script, TOKEN], "env": {"K": TOKEN}}
    model = ScriptedModel(["fine without it"])
    lead = HarnessAgent("lead", model, store=InMemoryStore(), mcp_servers={"login": server})
    try:
        with caplog.at_level(logging.DEBUG):
            await lead.call("go", RuntimeContext(session_id="s1", user_id="alice"))
    finally:
        await lead.aclose()
    prompt = model.requests[0].system_prompt
    assert "its stderr ends with: bad login for <args[2]>" in prompt
    assert TOKEN not in prompt and TOKEN not in caplog.text


async def test_a_crash_report_names_the_argument_not_its_value() -> None:
    server = {**ECHO, "args": [*ECHO["args"], f"--token={TOKEN}"]}  # type: ignore[list-item]
    model = ScriptedModel([ScriptedModel.tool_call("mcp__echo__crash", {}), "ok"])
    lead = HarnessAgent("lead", model, store=InMemoryStore(), mcp_servers={"echo": server})
    try:
        await lead.call("go", RuntimeContext(session_id="s1", user_id="alice"))
    finally:
        await lead.aclose()
    [result] = results_seen(model)
    assert result.is_error and "crashing on purpose" in result.output
    assert "<args[1]>" in result.output and TOKEN not in result.output
